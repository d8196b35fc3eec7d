/** Placeholder until the package's first module lands. */
export const PACKAGE_VERSION = '0.1.0';

/**
 * The check each package runs when it is imported: the SDK it adapts is installed where the app
 * resolves it, in a version the package supports. A wrong major (an unpinned install on Node 20
 * takes `ai` 6, which ignores approval settings) fails at import with one line, not later with a
 * TypeError or a tool that ran unasked.
 */

import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

import { ConfigurationError } from './errors.js';

/** A supported range, as the package's `peerDependencies` states it: `>=min <below` (both `x.y.z`). */
export interface PeerRange {
  readonly min: string;
  readonly below: string;
}

/** The version of `name` that a module at `importer` (an `import.meta.url`) resolves, or null if none. */
export function installedVersion(name: string, importer: string): string | null {
  const require = createRequire(importer);
  for (const folder of require.resolve.paths(name) ?? []) {
    const manifest = join(folder, name, 'package.json');
    if (!existsSync(manifest)) continue;
    const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { version?: unknown };
    return typeof parsed.version === 'string' ? parsed.version : null;
  }
  return null;
}

/** Throw ConfigurationError (one line: the version found and the one needed) unless `name` is in `range`. */
export function requirePeer(pkg: string, name: string, range: PeerRange, importer: string): string {
  const wanted = `${name} >=${range.min} <${range.below}`;
  const found = installedVersion(name, importer);
  if (found === null) throw new ConfigurationError(`${pkg} needs ${wanted}, and ${name} is not installed`);
  if (!inRange(found, range)) throw new ConfigurationError(`${pkg} needs ${wanted}, found ${name} ${found}`);
  return found;
}

function inRange(version: string, range: PeerRange): boolean {
  const have = parts(version);
  const min = parts(range.min);
  const below = parts(range.below);
  if (have === null || min === null || below === null) return false;
  return compare(have, min) >= 0 && compare(have, below) < 0;
}

function compare(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < 3; i++) if (a[i]! !== b[i]!) return a[i]! - b[i]!;
  return 0;
}

function parts(version: string): [number, number, number] | null {
  const match = /^(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/.exec(version);
  return match === null ? null : [Number(match[1]), Number(match[2]), Number(match[3])];
}

/**
 * A key directory as `crossgate keys init` makes it (`crossgate.authority.keyring`), written from node so
 * that a test server's key costs no Python process: `keyring.json` (0644, public) and the current key's
 * PKCS#8 PEM (0600) in a 0700 folder.
 */

import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { PublicKey } from '@crossgate/client';

/** Make a fresh keyring in `directory`; the pin text an agent pins (`crossgate keys show`). */
export function makeKeyring(directory: string): string {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const key = new PublicKey(Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url'));
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  writeFileSync(join(directory, `${key.kid}.pem`), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  const createdAt = new Date().toISOString();
  const file = { format: 'crossgate-keyring/1', current: key.kid, keys: [{ kid: key.kid, public_key: key.pin, created_at: createdAt }], revoked: [] };
  writeFileSync(join(directory, 'keyring.json'), `${JSON.stringify(file, null, 2)}\n`, { mode: 0o644 });
  return `# kid ${key.kid} (current, created ${createdAt})\n${key.pin}\n`;
}

/**
 * The state head where the tool runs (Python `crossgate.adapter._heads`): the newest signed head this gate
 * has seen, kept in its own file, never the store.
 *
 * A verified gate reads the server's state head (`GET /state-head`) every 2 s, verifies it with its pinned
 * keys and remembers the newest one in a file of its own, beside a marker for each approval this machine's
 * gates applied. It then refuses, before anything runs:
 *
 * - every call while the newest head it has is past its `expires_at`, or there is none (`stale_head`);
 * - a policy version older than the head's (`rolled_back`); a newer head naming an older policy version than
 *   one it holds is not adopted (the authority's server forgot, and the store was put back);
 * - a standing rule the head names revoked (`revoked_rule`);
 * - an approval the head, or this gate's file, names consumed (`consumed`).
 *
 * The file is `$CROSSGATE_HEAD_DIR/<kid>.json`, else `$XDG_STATE_HOME/crossgate/heads/<kid>.json`
 * (`~/.local/state` by default), where `kid` is the first pinned key's, with the markers in the folder
 * `<kid>.applied/` beside it: the very files a Python gate pinning the same key uses, so gates in both
 * languages on one machine share what they have seen.
 */

import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, parse } from 'node:path';

import { instant, tokenKid, type TrustedKeys, verifyStateHead } from './authority.js';
import type { StateHeadClaims } from './claims.js';
import { filterBytes, inFilter } from './consumed.js';
import { SignatureError } from './errors.js';

export const HEAD_DIR_ENV = 'CROSSGATE_HEAD_DIR';
export const HEAD_FILE_FORMAT = 'crossgate-head/1';
/** How often a gate reads the server's head again (the server signs one every few seconds). */
export const FETCH_SECONDS = 2;
/** The time stamp (seconds) of a marker for an approval that never lapses. */
export const FOREVER = 2 ** 40;

/** Where a gate pinning `keys` keeps its newest head (see the module's docs). */
export function defaultHeadFile(keys: TrustedKeys, env: NodeJS.ProcessEnv = process.env): string {
  let directory = env[HEAD_DIR_ENV];
  if (!directory) directory = join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'crossgate', 'heads');
  return join(directory, `${keys.kids[0]}.json`);
}

function warn(message: string): void {
  process.emitWarning(message, { type: 'CrossgateWarning' });
}

/** `path` with its last suffix replaced (Python's `Path.with_suffix`). */
function withSuffix(path: string, suffix: string): string {
  const { dir, name } = parse(path);
  return join(dir, name + suffix);
}

/**
 * A gate's memory: the newest head token in one JSON file (0600, replaced atomically), and one marker file
 * per approval applied on this machine in the folder beside it (`<kid>.applied/`), dated with its `apply_by`.
 *
 * Python's HeadFile also takes a lock file around its read-and-replace; Node has no `flock`, so a write here
 * racing another gate's may leave the older of two fresh heads in the file, until the next head replaces it
 * (each gate keeps the newest it saw in memory either way).
 */
export class HeadFile {
  readonly appliedDir: string;

  constructor(readonly path: string) {
    this.appliedDir = withSuffix(path, '.applied');
  }

  /** The head token stored; null with no file, or one unreadable (with a warning). */
  read(): string | null {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') warn(`crossgate: cannot read the state head file ${this.path}: ${(error as Error).message}`);
      return null;
    }
    let head: unknown = null;
    try {
      const data = JSON.parse(text) as { format?: unknown; head?: unknown } | null;
      head = data?.format === HEAD_FILE_FORMAT ? data.head : null;
    } catch {
      head = null;
    }
    if (typeof head !== 'string') {
      warn(`crossgate: ignoring the state head file ${this.path}: not a ${HEAD_FILE_FORMAT} file`);
      return null;
    }
    return head;
  }

  /** Store `newer(stored head)`; a file that cannot be written gives a warning (the gate keeps its memory). */
  write(newer: (stored: string | null) => string | null): void {
    const temporary = withSuffix(this.path, `.${process.pid}.tmp`);
    try {
      mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
      const document = { format: HEAD_FILE_FORMAT, head: newer(this.read()) };
      writeFileSync(temporary, JSON.stringify(document), { mode: 0o600 });
      renameSync(temporary, this.path);
    } catch (error) {
      warn(`crossgate: cannot write the state head file ${this.path}: ${(error as Error).message}`);
    }
  }

  /** Leave the marker of `requestId`'s approval, dated with its `apply_by` (null: it never lapses). */
  markApplied(requestId: string, applyBy: string | null): void {
    const marker = this.#marker(requestId);
    const stamp = applyBy === null ? FOREVER : Date.parse(applyBy) / 1000;
    try {
      try {
        closeSync(openSync(marker, 'a', 0o600));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        mkdirSync(this.appliedDir, { recursive: true, mode: 0o700 });
        closeSync(openSync(marker, 'a', 0o600));
      }
      utimesSync(marker, stamp, stamp);
    } catch (error) {
      warn(`crossgate: cannot record the applied approval in ${this.appliedDir}: ${(error as Error).message}`);
    }
  }

  /** True when an approval of `requestId` was applied on this machine and could still apply. */
  wasApplied(requestId: string, now: Date): boolean {
    try {
      return statSync(this.#marker(requestId)).mtimeMs > now.getTime();
    } catch {
      return false;
    }
  }

  /** Remove the markers of approvals past their `apply_by`. */
  prune(now: Date): void {
    let names: string[];
    try {
      names = readdirSync(this.appliedDir);
    } catch {
      return;
    }
    for (const name of names) {
      try {
        const marker = join(this.appliedDir, name);
        if (statSync(marker).mtimeMs <= now.getTime()) unlinkSync(marker);
      } catch {
        // gone meanwhile, or not ours to remove
      }
    }
  }

  #marker(requestId: string): string {
    return join(this.appliedDir, createHash('sha256').update(requestId, 'utf8').digest('hex').slice(0, 40));
  }
}

/**
 * The claims of a head `token`; null when there is none or it does not verify (with a warning). With `kid`
 * (the key it was fetched for), a head signed with another key is ignored too: a writer of the store gains
 * nothing by filing one key's head under another's kid.
 */
export function readStateHead(token: string | null, keys: TrustedKeys, kid?: string): StateHeadClaims | null {
  if (!token) return null;
  try {
    const signedBy = kid === undefined ? kid : tokenKid(token);
    if (signedBy !== kid) {
      warn(`crossgate: ignoring a state head filed under key ${kid} but signed with key ${signedBy}`);
      return null;
    }
    return verifyStateHead(token, keys);
  } catch (error) {
    if (!(error instanceof SignatureError)) throw error;
    warn(`crossgate: ignoring a state head that does not verify: ${error.message}`);
    return null;
  }
}

/** The pinned kids a gate reads heads of: every one not revoked, in the order pinned. */
export function liveKids(keys: TrustedKeys): string[] {
  return keys.kids.filter((kid) => !keys.revoked.has(kid));
}

/**
 * The newest valid head a gate has seen, fetched (`fetch(kid)`, for each pinned key not revoked, so a gate
 * pinning a keyring follows a rotation) every `FETCH_SECONDS`; `refreshed` runs after each round of fetches.
 */
export class HeadGuard {
  #head: StateHeadClaims | null = null;
  #token: string | null = null;
  #refused: string | null = null;
  #fetched = Number.NEGATIVE_INFINITY;
  #consumed: Buffer = Buffer.alloc(0);
  #refreshing: Promise<StateHeadClaims | null> | null = null;

  constructor(
    readonly keys: TrustedKeys,
    readonly fetch: (kid: string) => Promise<string | null>,
    readonly file: HeadFile,
    /** The time the head's expiry is compared with (a test moves it on). */
    public clock: () => Date = () => new Date(),
    readonly refreshed: () => Promise<void> = async () => {},
  ) {
    this.#take(file.read());
    file.prune(this.clock());
  }

  /** The newest valid head; SignatureError `stale_head` when it is missing or past its expiry. */
  async current(): Promise<StateHeadClaims> {
    const now = this.clock();
    let head = this.#head;
    if (head === null || performance.now() - this.#fetched >= FETCH_SECONDS * 1000 || expired(head, now)) {
      head = await this.#refresh();
    }
    if (head === null) {
      throw new SignatureError(
        'no state head signed by the authority is available (the crossgate server signs one every few ' +
          'seconds: is it running on this store?)',
        'stale_head',
      );
    }
    if (expired(head, now)) {
      throw new SignatureError(
        `the newest state head signed by the authority expired at ${when(head.expires_at)} (the store ` +
          'is frozen, or the crossgate server stopped signing)',
        'stale_head',
      );
    }
    return head;
  }

  /** True when the head, or an approval applied on this machine, names `requestId` consumed. */
  consumed(requestId: string): boolean {
    if (this.file.wasApplied(requestId, this.clock())) return true;
    return this.#consumed.length > 0 && inFilter(this.#consumed, requestId);
  }

  /** Remember that `requestId`'s approval ran here (a marker file, for every later process). */
  applied(requestId: string, applyBy: string | null): void {
    this.file.markApplied(requestId, applyBy);
  }

  #refresh(): Promise<StateHeadClaims | null> {
    this.#refreshing ??= this.#fetchAndTake().finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  async #fetchAndTake(): Promise<StateHeadClaims | null> {
    this.#fetched = performance.now();
    let adopted = false;
    for (const kid of liveKids(this.keys)) {
      let token: string | null;
      try {
        token = await this.fetch(kid);
      } catch (error) {
        // the server is down: the remembered head still counts (and the call itself cannot go through)
        warn(`crossgate: could not read the state head: ${(error as Error).message}`);
        continue;
      }
      adopted = this.#take(token, kid) || adopted;
    }
    if (adopted) this.file.write((stored) => this.#newer(stored));
    try {
      await this.refreshed();
    } catch (error) {
      warn(`crossgate: could not read what the state head is checked against: ${(error as Error).message}`);
    }
    return this.#head;
  }

  /** Adopt `token` (fetched for `kid`) if it verifies and is newer than the head held; true when it was adopted. */
  #take(token: string | null, kid?: string): boolean {
    if (token === null || token === this.#token || token === this.#refused) return false;
    const claims = readStateHead(token, this.keys, kid);
    if (claims === null) {
      this.#refused = token; // warned once, not every 2 s
      return false;
    }
    if (this.#head !== null && (instant(claims.issued_at) ?? 0n) <= (instant(this.#head.issued_at) ?? 0n)) return false;
    const lower = this.#head === null ? null : lowersPolicy(claims, this.#head);
    if (lower !== null) {
      if (token !== this.#refused) warn(`crossgate: ignoring a newer state head that ${lower} (a rollback)`);
      this.#refused = token; // warned once, not every 2 s
      return false;
    }
    this.#head = claims;
    this.#token = token;
    this.#consumed = filterBytes(claims.consumed);
    return true;
  }

  /** Of the file's head and this gate's, the newer valid one (another process may have seen a newer one). */
  #newer(stored: string | null): string | null {
    this.#take(stored);
    return this.#token;
  }
}

/**
 * What is wrong when `newer` names an older policy version than the head `held` (the authority never signs
 * one: its server lost its memory, and the store was put back); null when it does not.
 */
function lowersPolicy(newer: StateHeadClaims, held: StateHeadClaims): string | null {
  const floor = held.policy_version;
  if (floor === null || (newer.policy_version !== null && newer.policy_version >= floor)) return null;
  const shown = newer.policy_version === null ? 'no policy version' : `policy version ${newer.policy_version}`;
  return `names ${shown}, older than version ${floor} in a head already seen`;
}

function expired(head: StateHeadClaims, now: Date): boolean {
  return Date.parse(head.expires_at) <= now.getTime();
}

/** A time as Python's `isoformat(timespec="seconds")` writes it in UTC. */
function when(moment: string): string {
  return `${new Date(moment).toISOString().slice(0, 19)}+00:00`;
}

/**
 * Which calls a standing rule covers, as `crossgate.policy.rules.standing_rule_matches` decides it:
 * the gate checks it again where the tool runs, so a signed rule lets through only the calls it was
 * signed for, whatever the server answered.
 */

import { canonicalJson, fingerprint } from './canonical.js';
import type { JsonValue, StandingRule, ToolCall } from './model.js';

const MISSING = Symbol('missing');

/** True if `rule` is active at `now` and covers `call`. */
export function standingRuleMatches(rule: StandingRule, call: ToolCall, now: Date): boolean {
  if (!globMatch(rule.tool, call.tool)) return false;
  if (rule.revoked_at != null) return false;
  if (rule.expires_at != null && !(now.getTime() < Date.parse(rule.expires_at))) return false;
  if (rule.framework != null && rule.framework !== call.framework) return false;
  if (rule.agent != null && rule.agent !== (call.agent ?? null)) return false;
  if (rule.scope === 'run' && (rule.run == null || rule.run !== call.run)) return false;
  if (rule.scope === 'session' && (rule.session == null || rule.session !== (call.session || call.run || null))) return false;
  if (rule.match === 'exact') return rule.args_fingerprint === fingerprint(call.tool, call.args);
  if (rule.match === 'pattern') {
    for (const [arg, pattern] of Object.entries(rule.arg_patterns ?? {})) {
      const found = lookupArg(call.args, arg);
      if (found === MISSING || !globMatch(pattern, asText(found))) return false;
    }
  }
  return true;
}

/** The argument at `path`: the exact key first, then a dotted path through objects and list indexes. */
function lookupArg(args: Record<string, JsonValue>, path: string): JsonValue | typeof MISSING {
  if (Object.hasOwn(args, path)) return args[path]!;
  let current: JsonValue = args;
  for (const part of path.split('.')) {
    if (current !== null && typeof current === 'object' && !Array.isArray(current) && Object.hasOwn(current, part)) {
      current = current[part]!;
    } else if (Array.isArray(current) && /^[0-9]+$/.test(part) && Number(part) < current.length) {
      current = current[Number(part)]!;
    } else {
      return MISSING;
    }
  }
  return current;
}

/** Strings as they are, anything else as canonical JSON, so patterns see one stable text. */
function asText(value: JsonValue): string {
  return typeof value === 'string' ? value : canonicalJson(value);
}

type Token = { kind: 'star' } | { kind: 'any' } | { kind: 'char'; char: string } | { kind: 'set'; negate: boolean; items: [string, string][] };

/**
 * True if `text` matches the glob `pattern` as a whole, with Python `fnmatchcase`'s meaning (`*` any
 * text, `?` one character, `[...]` / `[!...]` a set), by code points, in time linear in each.
 */
export function globMatch(pattern: string, text: string): boolean {
  if (!/[*?[]/.test(pattern)) return text === pattern;
  const tokens = tokenize([...pattern]);
  const chars = [...text];
  // The classic wildcard walk: on a mismatch, go back to the last star and let it take one more character.
  let t = 0;
  let c = 0;
  let star = -1;
  let resume = 0;
  while (c < chars.length) {
    const token = tokens[t];
    if (token !== undefined && token.kind !== 'star' && accepts(token, chars[c]!)) {
      t += 1;
      c += 1;
    } else if (token?.kind === 'star') {
      star = t;
      resume = c;
      t += 1;
    } else if (star >= 0) {
      t = star + 1;
      resume += 1;
      c = resume;
    } else {
      return false;
    }
  }
  while (tokens[t]?.kind === 'star') t += 1;
  return t === tokens.length;
}

function accepts(token: Token, char: string): boolean {
  if (token.kind === 'any') return true;
  if (token.kind === 'char') return token.char === char;
  if (token.kind === 'set') {
    const point = char.codePointAt(0)!;
    const inside = token.items.some(([low, high]) => low.codePointAt(0)! <= point && point <= high.codePointAt(0)!);
    return inside !== token.negate;
  }
  return false;
}

function tokenize(pattern: string[]): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < pattern.length) {
    const char = pattern[i]!;
    i += 1;
    if (char === '*') {
      while (pattern[i] === '*') i += 1;
      tokens.push({ kind: 'star' });
    } else if (char === '?') {
      tokens.push({ kind: 'any' });
    } else if (char === '[') {
      const end = setEnd(pattern, i);
      if (end < 0) {
        tokens.push({ kind: 'char', char });
      } else {
        tokens.push(setToken(pattern.slice(i, end)));
        i = end + 1;
      }
    } else {
      tokens.push({ kind: 'char', char });
    }
  }
  return tokens;
}

/** Index of the `]` closing a set opened before `start`, or -1 (the `[` is then a literal). */
function setEnd(pattern: string[], start: number): number {
  let j = start;
  if (pattern[j] === '!') j += 1;
  if (pattern[j] === ']') j += 1;
  const found = pattern.indexOf(']', j);
  return found;
}

/** A set's body as ranges; `fnmatch` drops empty ranges, and a set left empty matches nothing (negated: anything). */
function setToken(body: string[]): Token {
  const negate = body[0] === '!';
  const items = negate ? body.slice(1) : body;
  const ranges: [string, string][] = [];
  let k = 0;
  while (k < items.length) {
    if (k + 2 < items.length && items[k + 1] === '-') {
      const [low, high] = [items[k]!, items[k + 2]!];
      if (low.codePointAt(0)! <= high.codePointAt(0)!) ranges.push([low, high]);
      k += 3;
    } else {
      ranges.push([items[k]!, items[k]!]);
      k += 1;
    }
  }
  return { kind: 'set', negate, items: ranges };
}

/**
 * Canonical JSON and the fingerprint that binds every decision to one tool call, exactly as
 * `crossgate.fingerprint` computes them in Python, so both sides agree on every fingerprint.
 *
 * Objects have their keys sorted by Unicode code point, no whitespace, strings unescaped beyond what
 * JSON requires. Numbers are written as Python writes the value the server parses from this client's
 * own JSON: integers as digits, other numbers in Python's shortest round-trip `repr` (`1e-07`, not
 * `1e-7`). NaN, infinities, lone surrogates and values that are not JSON are refused.
 */

import { createHash } from 'node:crypto';

import { InvalidArgumentsError } from './errors.js';
import type { JsonObject } from './model.js';

export const MAX_JSON_DEPTH = 64;
const ENVELOPE_DEPTH = 8;
const MAX_SAFE_FLOAT_INT = 2 ** 53;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The canonical JSON text of `value`. */
export function canonicalJson(value: unknown, maxDepth: number = MAX_JSON_DEPTH + ENVELOPE_DEPTH): string {
  return encode(value, 0, maxDepth, '$');
}

/** The lowercase hex sha256 binding a decision to `tool` called with `args`. */
export function fingerprint(tool: string, args: JsonObject): string {
  return sha256Hex(canonicalJson({ tool, args }));
}

/** The lowercase hex sha256 of `value`'s canonical JSON (what a decision's digests are). */
export function jsonDigest(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function encode(value: unknown, depth: number, maxDepth: number, path: string): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return encodeString(value, path);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      return encodeNumber(value, path);
    case 'object':
      break;
    default:
      throw new InvalidArgumentsError(`${path}: ${typeof value} is not a JSON value`);
  }
  if (depth >= maxDepth) throw new InvalidArgumentsError(`${path}: nested too deeply`);
  if (Array.isArray(value)) {
    return `[${value.map((item, i) => encode(item, depth + 1, maxDepth, `${path}[${i}]`)).join(',')}]`;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    throw new InvalidArgumentsError(`${path}: ${proto?.constructor?.name ?? 'object'} is not a JSON value`);
  }
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  entries.sort(([a], [b]) => compareCodePoints(a, b));
  const parts = entries.map(
    ([k, v]) => `${encodeString(k, `${path} key`)}:${encode(v, depth + 1, maxDepth, `${path}.${k}`)}`,
  );
  return `{${parts.join(',')}}`;
}

function encodeString(text: string, path: string): string {
  if (LONE_SURROGATE.test(text)) throw new InvalidArgumentsError(`${path}: holds a lone surrogate, which is not text`);
  // JSON.stringify escapes exactly what Python's encoder does with ensure_ascii=False once lone
  // surrogates are refused: quote, backslash, and the C0 controls (\b \f \n \r \t short, others \u00xx).
  return JSON.stringify(text);
}

function encodeNumber(value: number, path: string): string {
  if (!Number.isFinite(value)) throw new InvalidArgumentsError(`${path}: NaN and infinity are not JSON numbers`);
  const text = String(value);
  // Integral and written as digits: the server parses an int and writes its digits; -0 is 0 on both sides.
  if (Number.isInteger(value) && (Math.abs(value) <= MAX_SAFE_FLOAT_INT || !text.includes('e'))) return text;
  return pythonFloatRepr(value);
}

/** Python's `repr(float)`: the shortest round-trip digits, fixed for exponents -4..15, else `d.ddde±XX`. */
export function pythonFloatRepr(value: number): string {
  const [mantissa = '', exp = '0'] = value.toExponential().split('e');
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const exponent = Number(exp);
  const sign = negative ? '-' : '';
  if (exponent < -4 || exponent >= 16) {
    const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const magnitude = String(Math.abs(exponent)).padStart(2, '0');
    return `${sign}${head}e${exponent < 0 ? '-' : '+'}${magnitude}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
  const fraction = digits.slice(exponent + 1);
  return `${sign}${whole}.${fraction || '0'}`;
}

function compareCodePoints(a: string, b: string): number {
  // UTF-16 order differs from code point order only between a surrogate and U+E000..U+FFFF.
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}

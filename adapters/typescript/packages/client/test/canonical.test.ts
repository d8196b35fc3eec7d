import assert from 'node:assert/strict';
import { test } from 'node:test';

import { canonicalJson, fingerprint, InvalidArgumentsError, requestId, type JsonObject } from '@crossgate/client';
import { pythonOps } from '@crossgate/testing';

// Values whose canonical form differs between a naive JSON.stringify and Python's: key order by code
// point (an astral key sorts after U+FFFD), escapes, floats in repr form, huge and negative zeros.
const CORPUS: unknown[] = [
  { b: 1, a: 2, A: 3, _: 4, '': 5 },
  { '\u{1F600}': 1, '\uFFFD': 2, 'é': 3, z: 4 },
  ['tab\there', 'nl\n', 'quote"', 'back\\slash', '\u0000\u001f\u007f', '\u2028\u2029', 'é😀'],
  [0, -0, 1, -1, 1.5, 0.1, 1e-7, 1e-5, 0.0001, 123456789.125, 2 ** 53, 2 ** 53 + 2, 1e16, 1e20, 1e21, 1.5e300, -2.5e-300],
  [5e-324, Number.MAX_VALUE, 1234567890123456.7, 0.30000000000000004],
  { nested: { deeper: [{ y: null, x: true }, false] } },
  [],
  {},
];

test('canonical JSON is the same text Python writes, for every value of the corpus', () => {
  const python = pythonOps<{ canonical: string }>(CORPUS.map((value) => ({ op: 'canonical', value })));
  CORPUS.forEach((value, i) => assert.equal(canonicalJson(value), python[i]?.canonical, JSON.stringify(value)));
});

test('fingerprints and request ids match the Python ones', () => {
  const calls: [string, JsonObject][] = [
    ['delete_ticket', { id: 't3' }],
    ['write_file', { path: 'a/b.txt', content: 'é\n', mode: 420, ratio: 0.25 }],
    ['mcp__tickets__delete_ticket', {}],
  ];
  const parts: (string | number | null)[][] = [['run-1', 'call_1'], ['r', 1, null], []];
  const python = pythonOps<{ fingerprint?: string; id?: string }>([
    ...calls.map(([tool, args]) => ({ op: 'fingerprint', tool, args })),
    ...parts.map((p) => ({ op: 'request_id', tag: 'aisdk', parts: p })),
  ]);
  calls.forEach(([tool, args], i) => assert.equal(fingerprint(tool, args), python[i]?.fingerprint));
  parts.forEach((p, i) => assert.equal(requestId('aisdk', ...p), python[calls.length + i]?.id));
});

test('values with no canonical form are refused, naming where', () => {
  for (const [value, where] of [
    [{ a: Number.NaN }, '$.a'],
    [{ a: [1, Infinity] }, '$.a[1]'],
    [{ s: 'lone \uD800 surrogate' }, '$.s'],
    [{ d: new Date(0) }, '$.d'],
    [{ f: () => 1 }, '$.f'],
    [{ b: 10n }, '$.b'],
  ] as const) {
    assert.throws(() => canonicalJson(value), (error: unknown) => {
      assert.ok(error instanceof InvalidArgumentsError);
      assert.ok(error.message.startsWith(where), error.message);
      return true;
    });
  }
  let deep: unknown = 1;
  for (let i = 0; i < 100; i++) deep = [deep];
  assert.throws(() => canonicalJson(deep), InvalidArgumentsError);
});

/**
 * The state head the server shows, deleted or replaced by one another key signed (a writer of its
 * database, no private key), on a server that signs only at start and on writes: a gate with no head file
 * (a new machine) refuses every call (`stale_head`); a gate that remembers the genuine head keeps working.
 */

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { HEAD_RULE, STALE, type ToolCall, verifiedClient } from '@crossgate/client';
import { auditEvents, pythonOpsAsync, startServer, type LiveServer } from '@crossgate/testing';

let server: LiveServer;
before(async () => {
  server = await startServer({ settings: 'state_head_every_seconds = 3000\nstate_head_lifetime_seconds = 6000' });
});
after(() => server.stop());

const READ: ToolCall = { framework: 'mastra', tool: 'read_ticket', args: { id: 't1' }, run: 'run-forged-head' };
const machine = () => join(mkdtempSync(join(tmpdir(), 'crossgate-machine-')), 'head.json');
const gateOn = (headFile: string) => verifiedClient(server.client(), server.pin, { headFile });
const NO_HEAD =
  'no state head signed by the authority is available (the crossgate server signs one every few seconds: is it running on this store?)';

test('a forged or a deleted head: stale_head on a new machine; a gate that remembers the genuine one runs on', async () => {
  const remembering = machine();
  assert.equal((await gateOn(remembering).evaluateToRun(READ)).kind, 'allow');
  const warnings: string[] = [];
  const listen = (warning: Error) => warnings.push(warning.message);
  process.on('warning', listen);
  try {
    for (const what of ['forged_head', 'head']) {
      await pythonOpsAsync([{ op: 'rollback', db: server.db, what }]);
      const verdict = await gateOn(machine()).evaluateToRun(READ);
      assert.deepEqual([verdict.kind, verdict.rule, verdict.reason], ['deny', HEAD_RULE, STALE('read_ticket', NO_HEAD)], what);
      assert.equal((await gateOn(remembering).evaluateToRun(READ)).kind, 'allow', `${what}: the remembered head still counts`);
    }
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listen);
  }
  // once for each of the two gates that were shown it, not on every read
  // (the forged head is filed under the pinned kid but signed with another key: refused before its signature is checked)
  assert.equal(warnings.filter((w) => w.startsWith('crossgate: ignoring a state head filed under key')).length, 2, String(warnings));
  const refused = (await auditEvents(server)).filter((e) => e.kind === 'refused');
  assert.deepEqual(refused.map((e) => [e.payload.refused, e.payload.tool, e.payload.problem]), [
    ['stale_head', 'read_ticket', NO_HEAD],
    ['stale_head', 'read_ticket', NO_HEAD],
  ]);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ConfigurationError } from '@crossgate/client';

import { allowedDecisionsFor, importInterruptOn, interruptOnPolicy } from '@crossgate/langchain';

import { OVERVIEW_INTERRUPT_ON } from './support.js';

test('interruptOn as policy rules: the names, verdicts and decisions Python gives interrupt_on', () => {
  assert.deepEqual(importInterruptOn(OVERVIEW_INTERRUPT_ON), [
    { name: 'langchain:ask:write_file', verdict: 'ask', reason: 'interrupt_on asks a person to review this tool.', tool: 'write_file' },
    {
      name: 'langchain:ask:execute_sql',
      verdict: 'ask',
      reason: 'interrupt_on asks a person to review this tool.',
      allowed_decisions: ['approve', 'reject'],
      description: 'SQL statements need DBA approval',
      tool: 'execute_sql',
    },
    { name: 'langchain:allow:read_data', verdict: 'allow', reason: 'interrupt_on lets read_data run without review.', tool: 'read_data' },
  ]);
  assert.deepEqual(importInterruptOn({ 'delete_*': true })[0]?.tool, 'delete_[*]', 'a name matches only itself');
  assert.equal(interruptOnPolicy({}).default, 'allow', 'LangChain runs unlisted tools unreviewed');
  assert.deepEqual(allowedDecisionsFor(OVERVIEW_INTERRUPT_ON, 'execute_sql'), ['approve', 'reject']);
  assert.deepEqual(allowedDecisionsFor(OVERVIEW_INTERRUPT_ON, 'write_file'), ['approve', 'edit', 'reject', 'respond']);
});

test('interruptOn: code a policy cannot carry, and malformed settings, are refused with one line', () => {
  const when = () => true;
  assert.throws(() => importInterruptOn({ t: { allowedDecisions: ['approve'], when } }), (e: Error) => e instanceof ConfigurationError && /'when' is a function/.test(e.message));
  assert.equal(importInterruptOn({ t: { allowedDecisions: ['approve'], when } }, { when: 'ask' })[0]?.verdict, 'ask');
  assert.throws(() => importInterruptOn({ t: { allowedDecisions: ['approve'], description: () => 'x' } }), /description is a function/);
  assert.equal(importInterruptOn({ t: { allowedDecisions: ['approve'], description: () => 'x' } }, { callableDescription: 'drop' })[0]?.description, undefined);
  assert.throws(() => importInterruptOn({ t: { allowedDecisions: [] } }), /non-empty list/);
  assert.throws(() => importInterruptOn({ t: { allowedDecisions: ['maybe' as 'approve'] } }), /unknown decision "maybe"/);
  assert.throws(() => importInterruptOn({ t: { allowedDecisions: ['approve'], interruptMode: 'per_call' } as never }), /unknown key\(s\) interruptMode/);
  assert.throws(() => importInterruptOn({ t: 'yes' as never }), /expected true, false or a config object/);
});

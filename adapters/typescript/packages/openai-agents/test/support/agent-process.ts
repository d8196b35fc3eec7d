/**
 * One agent process of the multi-process tests: `park <run>` runs the seed agent until it parks, and
 * `resume <parkedRun>` resumes it. It holds only the server's URL and an agent token (no store), and
 * prints one JSON line: the outcome, what the model was told, or the error that stopped it.
 */

import { AgentClient, CrossgateError } from '@crossgate/client';
import { Gate, type SdkResult } from '@crossgate/openai-agents';
import { TicketStore } from '@crossgate/testing';

import { del, triage } from './triage.js';

const [command, target] = process.argv.slice(2);
const env = process.env;
const client = new AgentClient({ baseUrl: env.CROSSGATE_SERVER ?? '', token: env.CROSSGATE_AGENT_TOKEN ?? '' });
const { agent, model } = triage(new TicketStore(env.TICKETS ?? ''), [[del('t3'), del('t1')]]);
const gate = new Gate({ client, sdkAgent: agent });

try {
  const outcome =
    command === 'park' ? await gate.run('Delete the spam tickets t3 and t1.', { run: target ?? '' }) : await gate.resume(target ?? '');
  const final = outcome.status === 'finished' ? String((outcome.result as SdkResult).finalOutput) : null;
  console.log(JSON.stringify({ ...outcome, result: undefined, final, told: model.told() }));
} catch (error) {
  if (!(error instanceof CrossgateError)) throw error;
  console.log(JSON.stringify({ error: error.name, code: (error as { code?: string }).code ?? null, message: error.message }));
}

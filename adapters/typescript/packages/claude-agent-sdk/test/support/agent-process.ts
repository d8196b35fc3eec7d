/**
 * One agent process of the multi-process tests: `park` runs the seed 003 prompt until the gate parks it,
 * `resume <parkedRun>` resumes it. It holds only the server's URL and an agent token (no store), and
 * prints one JSON line: the outcome, or the crossgate error that stopped it.
 */

import { Gate } from '@crossgate/claude-agent-sdk';
import { AgentClient, CrossgateError } from '@crossgate/client';
import { TicketStore } from '@crossgate/testing';

import { calls, cliEnv } from './messages-api.js';
import { ticketTools } from './tickets.js';

export const SEED_PROMPT = calls(['delete_ticket', { id: 't3' }], ['delete_ticket', { id: 't1' }]);

const [command, target] = process.argv.slice(2);
const env = process.env;
const client = new AgentClient({ baseUrl: env.CROSSGATE_SERVER ?? '', token: env.CROSSGATE_AGENT_TOKEN ?? '' });
const gate = new Gate({
  client,
  options: { env: cliEnv(env.MESSAGES_API ?? '', env.CLI_ROOT ?? ''), cwd: env.WORK ?? '', settingSources: [], tools: [] },
  servers: { tickets: ticketTools(new TicketStore(env.TICKETS ?? '')) },
});

try {
  const outcome = command === 'park' ? await gate.run(SEED_PROMPT) : await gate.resume(target ?? '');
  const final = outcome.status === 'finished' && outcome.result.subtype === 'success' ? outcome.result.result : null;
  console.log(JSON.stringify({ ...outcome, result: undefined, final }));
} catch (error) {
  if (!(error instanceof CrossgateError)) throw error;
  console.log(JSON.stringify({ error: error.name, code: (error as { code?: string }).code ?? null, message: error.message }));
}

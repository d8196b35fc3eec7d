/**
 * One scripted agent as its own process: `node dist/cli.js <sdk> start <run>` asks to delete ticket
 * `$CROSSGATE_TICKET` and finishes or parks; `node dist/cli.js <sdk> resume <parkedRun>` takes a parked
 * run forward. The demo runs it (the AI SDK agent), and so do the page's tests (one per SDK).
 *
 * It holds only the server's address and an agent token (`$CROSSGATE_SERVER`, `$CROSSGATE_AGENT_TOKEN`), and
 * the authority's public key when `$CROSSGATE_AUTHORITY_PUBKEY` pins one: never the store. Tickets are
 * the JSON file `$CROSSGATE_TICKETS`; `$CROSSGATE_WORK` keeps what an SDK needs across processes
 * (Mastra's storage, the Claude CLI's sessions); the Claude agent talks to the scripted Messages API at
 * `$MESSAGES_API`. It prints one JSON line: the outcome and what the model read, or the error.
 */

import { AgentClient, CrossgateError } from '@crossgate/client';
import { TicketStore } from '@crossgate/testing';

import { scriptedAgent, SDKS, type Sdk } from './agents.js';

const [sdk, command, target] = process.argv.slice(2);
const env = process.env;

function fail(message: string): never {
  console.log(JSON.stringify({ error: 'usage', message }));
  process.exit(2);
}

if (!SDKS.includes(sdk as Sdk)) fail(`the first argument is an SDK: ${SDKS.join(', ')}`);
if ((command !== 'start' && command !== 'resume') || !target) fail('usage: cli.js <sdk> start <run> | resume <parkedRun>');
if (!env.CROSSGATE_SERVER && env.CROSSGATE_URL) fail('$CROSSGATE_URL is now $CROSSGATE_SERVER (one name with the Python side): rename it');
for (const name of ['CROSSGATE_SERVER', 'CROSSGATE_AGENT_TOKEN', 'CROSSGATE_TICKETS', 'CROSSGATE_TICKET', 'CROSSGATE_WORK']) {
  if (!env[name]) fail(`$${name} is not set`);
}

const tickets = new TicketStore(env.CROSSGATE_TICKETS!);
const client = new AgentClient({ baseUrl: env.CROSSGATE_SERVER!, token: env.CROSSGATE_AGENT_TOKEN! });
const api = env.MESSAGES_API ? { baseUrl: env.MESSAGES_API, recordPath: '', requests: () => [], stop: async () => {} } : undefined;
const agent = scriptedAgent(sdk as Sdk, [{ tool: 'delete_ticket', args: { id: env.CROSSGATE_TICKET! } }], {
  client,
  dir: env.CROSSGATE_WORK!,
  ...(api ? { messagesApi: api } : {}),
  body: (call) => tickets.delete(String(call.args.id)),
});

try {
  const outcome = command === 'start' ? await agent.run(target) : await agent.resume(target);
  const told = agent.read()[0] ?? null;
  console.log(JSON.stringify({ ...outcome, result: undefined, framework: agent.framework, told }));
} catch (error) {
  if (!(error instanceof CrossgateError)) throw error;
  console.log(JSON.stringify({ error: error.name, message: error.message }));
  process.exitCode = 1;
}

/**
 * The seed agent as its own process: `node agent.js park <tickets>` runs until it parks, and
 * `node agent.js resume <tickets> <parked id>` resumes it. Prints one JSON line. The server and the
 * credential come from $CROSSGATE_SERVER and $CROSSGATE_AGENT_TOKEN: no store, only a token.
 */

import { AgentClient } from '@crossgate/client';
import { TicketStore } from '@crossgate/testing';

import { callRequestId } from '@crossgate/ai-sdk';

import { seedGate, ticketModel, toolResults } from './support.js';

async function main(): Promise<void> {
  const [mode, ticketsPath, parkedId] = process.argv.slice(2);
  const client = new AgentClient({ baseUrl: process.env.CROSSGATE_SERVER ?? '', token: process.env.CROSSGATE_AGENT_TOKEN ?? '' });
  const tickets = new TicketStore(ticketsPath ?? '');
  const model = ticketModel();
  const gate = seedGate(client, tickets, model);
  if (mode === 'park') {
    const outcome = await gate.run('Delete tickets t3 and t1.', { run: 'seed-run' });
    const ids = { t3: callRequestId('seed-run', 'call_t3'), t1: callRequestId('seed-run', 'call_t1') };
    console.log(JSON.stringify({ outcome, ids, tickets: tickets.ids() }));
    return;
  }
  const outcome = await gate.resume(parkedId ?? '');
  const last = model.doGenerateCalls.at(-1);
  const text = outcome.status === 'finished' ? outcome.result.result.text : null;
  console.log(JSON.stringify({ status: outcome.status, text, read: last ? toolResults(last.prompt) : null, tickets: tickets.ids() }));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
  process.exit(1);
});

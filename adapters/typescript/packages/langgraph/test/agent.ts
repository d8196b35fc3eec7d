/**
 * The seed graph as its own process: `node agent.js park <tickets> <checkpoints>` runs until it parks,
 * `node agent.js resume <tickets> <checkpoints> <parked id>` resumes it. Prints one JSON line. The
 * server, the credential and the authority's public key come from the environment: no store.
 * `<checkpoints>` is a SQLite file, or a PostgreSQL URL (see `openCheckpoints`).
 */

import { AgentClient, verifiedClient } from '@crossgate/client';
import { TicketStore } from '@crossgate/testing';
import { toolResults } from '@crossgate/testing/langchain';

import { callRequestId, Gate } from '@crossgate/langgraph';

import { openCheckpoints, toolGraph } from './support.js';

async function main(): Promise<void> {
  const [mode, ticketsPath, checkpoints, parkedId] = process.argv.slice(2);
  const client = verifiedClient(new AgentClient({ baseUrl: process.env.CROSSGATE_SERVER ?? '', token: process.env.CROSSGATE_AGENT_TOKEN ?? '' }));
  const tickets = new TicketStore(ticketsPath ?? '');
  const saved = await openCheckpoints(checkpoints ?? '');
  try {
    const { model, graph } = toolGraph(client, tickets, saved.saver);
    const gate = new Gate({ client, graph, agent: 'tickets' });
    if (mode === 'park') {
      const outcome = await gate.run({ messages: [{ role: 'user', content: 'Delete tickets t3 and t1.' }] }, { thread: 'seed-run' });
      const ids = { t3: callRequestId('seed-run', 'call_t3'), t1: callRequestId('seed-run', 'call_t1') };
      console.log(JSON.stringify({ outcome, ids, tickets: tickets.ids() }));
      return;
    }
    const outcome = await gate.resume(parkedId ?? '');
    console.log(JSON.stringify({ status: outcome.status, read: toolResults(model.prompts.at(-1) ?? []), tickets: tickets.ids() }));
  } finally {
    await saved.close();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
  process.exit(1);
});

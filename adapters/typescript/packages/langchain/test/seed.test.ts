import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { startServer, type LiveServer } from '@crossgate/testing';
import { seedScenario } from '@crossgate/testing/langchain';

let server: LiveServer;
before(async () => {
  server = await startServer();
});
after(() => server.stop());

test('seed: park in one process (SQLite checkpointer), decide with a reviewer token over the API, resume in a third; t3 deleted once, t1 kept, the model reads the rejection verbatim', () => seedScenario(server, fileURLToPath(new URL('./agent.js', import.meta.url)), 'langchain-ts'));

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { cliEnv, startMessagesApi, startServer, type LiveServer } from '@crossgate/testing';

import { publishable, runWithReviewer, snippets } from './snippets.js';

const PACKAGES = fileURLToPath(new URL('../../', import.meta.url));

let server: LiveServer;
before(async () => {
  server = await startServer({ policy: 'version: 1\ndefault: allow\nrules:\n  - name: review-deletes\n    verdict: ask\n    tool: delete_ticket\n' });
});
after(() => server.stop());

test('every publishable package has a README with at least one snippet that runs', () => {
  const names = publishable(PACKAGES);
  assert.ok(names.includes('langchain') && names.includes('client'), names.join(', '));
  for (const name of names) {
    const readme = join(PACKAGES, name, 'README.md');
    assert.ok(existsSync(readme), `${name} has no README.md`);
    assert.ok(snippets(readme, name).length > 0, `${name}'s README has no runnable js snippet`);
  }
});

for (const name of publishable(PACKAGES)) {
  const readme = join(PACKAGES, name, 'README.md');
  if (!existsSync(readme)) continue;
  for (const snippet of snippets(readme, name)) {
    test(`${name} README snippet ${snippet.index + 1} runs on an offline model against a live server`, async () => {
      // Inside the package's folder (dist-test is build output), so it imports as an app of the workspace would.
      const folder = join(PACKAGES, name, 'dist-test');
      mkdirSync(folder, { recursive: true });
      const file = join(folder, `readme-snippet-${snippet.index + 1}.mjs`);
      writeFileSync(file, snippet.code);
      // The Claude CLI's offline model: the scripted Messages API, and a home inside the folder.
      const api = name === 'claude-agent-sdk' ? await startMessagesApi(folder) : null;
      const env = api === null ? {} : cliEnv(api.baseUrl, join(folder, 'cli'));
      const ran = await runWithReviewer(server, file, folder, env).finally(() => api?.stop());
      assert.equal(ran.status, 0, `${ran.stdout}\n${ran.stderr}`);
      assert.doesNotMatch(ran.stderr, /Error/, ran.stderr);
      assert.match(ran.stdout, /finished/, 'each snippet prints the status it ends with');
    });
  }
}

/**
 * The packages as an app outside the workspace gets them: `npm pack` tarballs installed in a fresh
 * folder (no workspace, no links), the SDKs as the app's own dependencies. One copy of each SDK, a
 * gated call that runs against a live server, and a wrong SDK major refused at import.
 */

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { startServer, type LiveServer } from '@crossgate/testing';

import { runWithReviewer, snippets } from './snippets.js';

const run = promisify(execFile);
const WORKSPACE = fileURLToPath(new URL('../../../', import.meta.url));
const NPM = process.env.npm_execpath?.endsWith('.js') ? [process.execPath, process.env.npm_execpath] : ['npm'];
const PACKAGES = ['client', 'langgraph', 'langchain', 'ai-sdk'] as const;

/** The workspace's exact pins, so the app installs what the workspace tested (from npm's cache when it can). */
function pin(name: string): string {
  const lock = JSON.parse(readFileSync(join(WORKSPACE, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
  return lock.packages[`node_modules/${name}`]!.version;
}

function npm(args: string[], cwd: string) {
  const [command, ...head] = NPM as [string, ...string[]];
  return run(command, [...head, ...args], { cwd, maxBuffer: 32 * 1024 * 1024, env: { ...process.env, npm_config_workspaces: '' } });
}

/** Every installed copy of `name` under `root`'s node_modules trees. */
function copies(root: string, name: string): string[] {
  const found: string[] = [];
  const walk = (modules: string, depth: number) => {
    if (depth > 6 || !existsSync(modules)) return;
    if (existsSync(join(modules, name, 'package.json'))) found.push(join(modules, name));
    for (const entry of readdirSync(modules)) {
      const folders = entry.startsWith('@') ? readdirSync(join(modules, entry)).map((e) => join(modules, entry, e)) : [join(modules, entry)];
      for (const folder of folders) walk(join(folder, 'node_modules'), depth + 1);
    }
  };
  walk(join(root, 'node_modules'), 0);
  return found;
}

/** Why this node cannot run `@crossgate/${name}` (below its `engines`, e.g. `>=22`), or false. */
function unsupported(name: string): string | false {
  const { engines } = JSON.parse(readFileSync(join(WORKSPACE, 'packages', name, 'package.json'), 'utf8')) as { engines: { node: string } };
  const [major = 0, minor = 0] = (/^>=(\d+)(?:\.(\d+))?/.exec(engines.node) ?? []).slice(1).map(Number);
  const [nodeMajor = 0, nodeMinor = 0] = process.versions.node.split('.').map(Number);
  const below = nodeMajor < major || (nodeMajor === major && nodeMinor < minor);
  return below ? `@crossgate/${name} needs Node ${engines.node}; this is ${process.version}` : false;
}

let server: LiveServer;
let packs: string;
const tarballs: Record<string, string> = {};
before(async () => {
  server = await startServer();
  packs = mkdtempSync(join(tmpdir(), 'crossgate-packs-'));
  const workspaces = PACKAGES.flatMap((p) => ['-w', `@crossgate/${p}`]);
  const { stdout } = await npm(['pack', '--json', '--pack-destination', packs, ...workspaces], WORKSPACE);
  for (const entry of JSON.parse(stdout) as { name: string; filename: string }[]) tarballs[entry.name] = join(packs, entry.filename);
});
after(async () => {
  await server.stop();
  rmSync(packs, { recursive: true, force: true });
});

test('the packed tarballs hold the build and the README, and no tests or sources', () => {
  for (const name of PACKAGES) assert.ok(tarballs[`@crossgate/${name}`], `@crossgate/${name} packed`);
});

test('an app outside the workspace installs the tarballs, gets one copy of each SDK, and runs a gated call', { timeout: 600_000 }, async () => {
  const app = mkdtempSync(join(tmpdir(), 'crossgate-app-'));
  try {
    const sdks = ['langchain', '@langchain/core', '@langchain/langgraph', 'zod'];
    const dependencies: Record<string, string> = Object.fromEntries(sdks.map((name) => [name, pin(name)]));
    for (const name of ['client', 'langgraph', 'langchain']) dependencies[`@crossgate/${name}`] = `file:${tarballs[`@crossgate/${name}`]}`;
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module', dependencies }, null, 2));
    const { stderr } = await npm(['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=warn'], app);
    assert.doesNotMatch(stderr, /EBADENGINE/, `every package installed supports Node ${process.version}`);

    for (const name of ['client', 'langgraph', 'langchain']) {
      const installed = join(app, 'node_modules', '@crossgate', name);
      assert.ok(existsSync(join(installed, 'dist', 'index.js')), `${name} installed from its tarball`);
      assert.ok(!readFileSync(join(installed, 'package.json'), 'utf8').includes('"private"'));
    }
    for (const sdk of ['langchain', '@langchain/core', '@langchain/langgraph']) {
      assert.deepEqual(copies(app, sdk), [join(app, 'node_modules', sdk)], `one copy of ${sdk}: the app's`);
    }
    const snippet = snippets(join(WORKSPACE, 'packages', 'langchain', 'README.md'), 'langchain')[0]!;
    writeFileSync(join(app, 'main.mjs'), snippet.code);
    const ran = await runWithReviewer(server, join(app, 'main.mjs'), app);
    assert.equal(ran.status, 0, `${ran.stdout}\n${ran.stderr}`);
    assert.match(ran.stdout, /^finished /m);
    const decided = await server.client().get(ran.decided[0] ?? '');
    assert.equal(decided.status, 'applied', 'the reviewed call ran through the check, once');
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
});

test('a wrong SDK major is refused at import with one line naming the version found and the version needed', { timeout: 600_000, skip: unsupported('ai-sdk') }, async () => {
  const app = mkdtempSync(join(tmpdir(), 'crossgate-ai6-'));
  try {
    // npm itself refuses the peer conflict (ERESOLVE); a user who overrides it gets ai 6 next to the package.
    const dependencies = {
      '@crossgate/client': `file:${tarballs['@crossgate/client']}`,
      '@crossgate/ai-sdk': `file:${tarballs['@crossgate/ai-sdk']}`,
      ai: '6.0.326',
      zod: pin('zod'),
    };
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module', dependencies }, null, 2));
    await npm(['install', '--legacy-peer-deps', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], app);
    assert.equal((JSON.parse(readFileSync(join(app, 'node_modules', 'ai', 'package.json'), 'utf8')) as { version: string }).version, '6.0.326');
    writeFileSync(join(app, 'main.mjs'), "import '@crossgate/ai-sdk';\n");
    const failed = await run(process.execPath, [join(app, 'main.mjs')], { cwd: app }).then(
      () => null,
      (error: { stderr: string }) => error,
    );
    assert.ok(failed !== null, 'the import failed');
    const lines = failed.stderr.split('\n').filter((line) => line.includes('@crossgate/ai-sdk needs'));
    assert.equal(lines.length, 1, failed.stderr);
    assert.match(lines[0]!, /ConfigurationError: @crossgate\/ai-sdk needs ai >=7\.0\.173 <8\.0\.0, found ai 6\.0\.326/);
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
});

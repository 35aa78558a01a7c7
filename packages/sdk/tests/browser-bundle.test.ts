/**
 * A browser bundle of @guidon/sdk leaves the engine out (package.json `browser` maps local mode
 * to a stub: a page never holds rules), while a Node bundle keeps it. Built with rolldown (Vite's
 * bundler) from the package as installed in the workspace.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');

async function bundle(platform: 'browser' | 'node'): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'guidon-bundle-'));
  try {
    const entry = join(dir, 'entry.mjs');
    writeFileSync(entry, "import { createClient } from '@guidon/sdk';\nglobalThis.createClient = createClient;\n");
    const built = await rolldown({ input: entry, platform, cwd: root, resolve: { modules: [join(root, 'node_modules')] }, logLevel: 'silent' });
    const { output } = await built.generate({ format: 'esm' });
    return output[0].code;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the browser bundle has no engine, no RE2 and no semver; the Node bundle has them', async () => {
  const browser = await bundle('browser');
  for (const marker of ['compileFlagSet', 'RE2JS', 'SemVer']) assert.ok(!browser.includes(marker), `browser bundle holds ${marker}`);
  assert.ok(browser.includes('Local evaluation is for servers'));
  // 40,000 until the answer in the stream message and the refetch spread (docs/sdk.md) added 1.6 KB.
  assert.ok(browser.length < 44_000, `browser bundle: ${browser.length} bytes`);
  const node = await bundle('node');
  assert.ok(node.includes('compileFlagSet'));
});

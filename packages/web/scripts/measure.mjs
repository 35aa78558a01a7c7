// Measures the dashboard for docs/performance.md: the JS shipped on first load (gzipped), and how
// long the flags page takes to update a list of 1,000 flags as a person types in the search box
// (from the input event to the frame after the list changed), in Debian's Chromium.
// Run after `npm run build`: `npm run measure -w packages/web`.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { newProject, newUser, request, startServer } from '@guidon/server/dist/tests/harness.js';
import { launch } from '../e2e/dist/browser.js';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const html = readFileSync(`${dist}index.html`, 'utf8');
const firstLoad = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+\.(js|css))"/g)].map(([, path, kind]) => {
  const bytes = readFileSync(dist + path);
  return { path, kind, raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
});
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
const sum = (kind, field) => firstLoad.filter((file) => file.kind === kind).reduce((total, file) => total + file[field], 0);
console.log(`first load: JS ${kb(sum('js', 'gzip'))} gzipped (${kb(sum('js', 'raw'))} minified), CSS ${kb(sum('css', 'gzip'))} gzipped`);

const server = await startServer({ LOG_LEVEL: 'warn' });
const browser = await launch();
try {
  const user = await newUser(server, 'measure');
  const project = await newProject(server, user, 'Thousand flags');
  const path = `/api/projects/${project.id}/environments/${project.production}/flags`;
  for (let i = 0; i < 1000; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, (_, j) => {
        const n = String(i + j).padStart(4, '0');
        return request(server, 'POST', path, { token: user.token, body: { key: `flag_${n}`, name: `Feature ${n}`, enabled: (i + j) % 3 === 0, rollout_percentage: (i + j) % 101 } });
      }),
    );
  }
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await page.goto(`${server.url}/login`);
  await page.evaluate((token) => localStorage.setItem('guidon.token', token), user.token);
  await page.goto(`${server.url}/projects/${project.id}`);
  await page.getByRole('status').filter({ hasText: /^1000 flags$/ }).waitFor({ timeout: 30_000 });

  const typeAndTime = (query) =>
    page.evaluate(
      (q) =>
        new Promise((resolve) => {
          const input = document.getElementById('flag-search');
          const status = document.querySelector('[data-testid="flag-count"]');
          const before = status.textContent;
          const setValue = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
          const observer = new MutationObserver(() => {
            if (status.textContent === before) return;
            observer.disconnect();
            requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - start), 0));
          });
          observer.observe(status, { childList: true, characterData: true, subtree: true });
          setTimeout(() => resolve(Number.NaN), 5000); // a step that changed nothing is a bug in the sequence
          const start = performance.now();
          setValue.call(input, q);
          input.dispatchEvent(new Event('input', { bubbles: true }));
        }),
      query,
    );
  await typeAndTime('flag_00'); // warm-up
  // Typing narrows the list; clearing it renders all 1,000 rows again (the slowest case).
  // Each step changes how many flags match, so the count line changes.
  const sequence = ['5', '55', '555', '', 'flag_09', 'flag_099', '7', ''];
  const timings = [];
  for (let round = 0; round < 3; round++) {
    for (const query of sequence) timings.push({ query, ms: await typeAndTime(query) });
  }
  const sorted = timings.map((t) => t.ms).sort((a, b) => a - b);
  const clearing = timings.filter((t) => t.query === '').map((t) => t.ms);
  const narrowing = timings.filter((t) => t.query !== '').map((t) => t.ms);
  const fmt = (list) => `median ${list.sort((a, b) => a - b)[Math.floor(list.length / 2)].toFixed(1)} ms, max ${Math.max(...list).toFixed(1)} ms`;
  console.log(`search over 1,000 flags: every update ${fmt(sorted)} (${timings.length} updates)`);
  console.log(`  narrowing as you type: ${fmt(narrowing)}; clearing back to all 1,000 rows: ${fmt(clearing)}`);
} finally {
  await browser.close();
  await server.close();
}

// node scripts/doc-links.mjs [root]: checks the relative links of README.md and docs/ (npm test runs it, scripts/test.mjs).
// Every relative link in docs/**/*.md and README.md must name an existing file (and, for #anchors, an existing heading).
import { readFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
const root = process.argv[2] ?? '.';
const files = ['README.md'];
const walk = (d) => { for (const f of readdirSync(join(root, d))) { const p = join(d, f); if (statSync(join(root, p)).isDirectory()) walk(p); else if (p.endsWith('.md')) files.push(p); } };
walk('docs');
const slug = (h) => h.trim().toLowerCase().replace(/[`*_]/g, '').replace(/[^\p{L}\p{N} -]/gu, '').replace(/ /g, '-');
const anchors = (p) => new Set(readFileSync(p, 'utf8').split('\n').filter((l) => /^#{1,6} /.test(l)).map((l) => slug(l.replace(/^#+ /, ''))));
let bad = 0, count = 0;
for (const f of files) {
  const text = readFileSync(join(root, f), 'utf8').replace(/```[\s\S]*?```/g, '');
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1];
    if (/^[a-z]+:/i.test(target)) continue;
    count++;
    const [path, anchor] = target.split('#');
    const full = path === '' ? join(root, f) : resolve(join(root, dirname(f)), path);
    if (!existsSync(full)) { console.log(`${f}: missing file ${target}`); bad++; continue; }
    if (anchor && full.endsWith('.md') && !anchors(full).has(anchor)) { console.log(`${f}: missing anchor ${target}`); bad++; }
  }
}
console.log(`${count} relative links checked, ${bad} broken`);
process.exit(bad ? 1 : 0);

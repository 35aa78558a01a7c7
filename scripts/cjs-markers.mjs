// After tsc: the CommonJS builds of the client packages (dist/cjs) sit inside "type": "module"
// packages, so each gets a package.json of its own that says its .js files are CommonJS.
import { existsSync, writeFileSync } from 'node:fs';

for (const name of ['engine', 'sdk', 'openfeature']) {
  const dir = `packages/${name}/dist/cjs`;
  if (existsSync(dir)) writeFileSync(`${dir}/package.json`, '{ "type": "commonjs" }\n');
}

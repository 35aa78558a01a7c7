// Fails when files of a package's src/ import each other in a circle, type imports included:
// files import one way (docs/adr/0006-module-map.md). madge reads the TypeScript sources.
import madge from 'madge';

const packages = ['engine', 'sdk', 'openfeature', 'server', 'cli', 'web'];
let circles = 0;
for (const name of packages) {
  const graph = await madge(`packages/${name}/src`, {
    fileExtensions: ['ts', 'tsx'],
    tsConfig: 'tsconfig.base.json',
    detectiveOptions: { ts: { skipTypeImports: false }, tsx: { skipTypeImports: false } },
  });
  for (const circle of graph.circular()) {
    circles++;
    console.error(`packages/${name}/src: ${[...circle, circle[0]].join(' → ')}`);
  }
}
console.log(circles === 0 ? `no import circle in packages/{${packages.join(',')}}/src` : `${circles} import circle(s)`);
process.exit(circles === 0 ? 0 : 1);

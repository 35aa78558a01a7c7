// Fails when files of a package's src/ import each other in a circle, type imports included:
// files import one way (docs/adr/0006-module-map.md). Also when two rooms of the server
// (packages/server/src/modules/<room>/) import each other, even through files that make no
// circle: rooms depend one way too. madge reads the TypeScript sources.
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
  if (name !== 'server') continue;
  const roomOf = (file) => /^modules\/([^/]+)\//.exec(file)?.[1];
  const roomEdges = new Set();
  for (const [file, imports] of Object.entries(graph.obj())) {
    for (const imported of imports) {
      const [from, to] = [roomOf(file), roomOf(imported)];
      if (from && to && from !== to) roomEdges.add(`${from} ${to}`);
    }
  }
  for (const edge of roomEdges) {
    const [from, to] = edge.split(' ');
    if (from < to && roomEdges.has(`${to} ${from}`)) {
      circles++;
      console.error(`packages/server/src/modules: ${from} and ${to} import each other`);
    }
  }
}
console.log(circles === 0 ? `no import circle in packages/{${packages.join(',')}}/src, and no two server rooms import each other` : `${circles} import circle(s)`);
process.exit(circles === 0 ? 0 : 1);

/**
 * The cost of a write on the change path: CPU time of this process (server and client together)
 * per PUT of a flag's rollout, 400 sequential PUTs after 50 of warm-up, on a fresh database
 * (GUIDON_TEST_DATABASE=postgres for PostgreSQL). Prints one line; compare runs of two builds
 * alternated (docs/performance.md).
 */
import { flagsPath, newFlag, newProject, newUser, request, startServer } from '../tests/harness.js';

const server = await startServer({}, {});
try {
  const user = await newUser(server, 'bench');
  const project = await newProject(server, user, 'Writes');
  const flag = await newFlag(server, user, project, { key: 'written' });
  const put = (i: number) => request(server, 'PUT', `${flagsPath(project)}/${flag.id}`, { token: user.token, body: { rollout_percentage: i % 100 } });
  for (let i = 0; i < 50; i++) await put(i + 1);
  const started = process.cpuUsage();
  const wall = performance.now();
  const count = 400;
  for (let i = 0; i < count; i++) await put(i + 51);
  const used = process.cpuUsage(started);
  console.log(JSON.stringify({ database: server.config.database.kind, puts: count, cpu_us_per_put: Math.round((used.user + used.system) / count), wall_ms_per_put: +((performance.now() - wall) / count).toFixed(2) }));
} finally {
  await server.close();
}

/**
 * A PostgreSQL cluster of the test's own (initdb into a temporary folder, its own port), so a test
 * can stop it, kill it and start it again without touching the machine's shared server. As root,
 * initdb and postgres run as the `postgres` OS user (they refuse to run as root).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './harness.js';
import type { TestDatabase } from './test-database.js';

/** The newest installed PostgreSQL's bin folder, or null. */
function postgresBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((name) => existsSync(join(root, name, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

const bin = postgresBin();
const asRoot = process.getuid?.() === 0;

/** Why a private cluster cannot run here, or false when it can. */
export const privatePostgresMissing: string | false = bin ? false : 'PostgreSQL binaries (initdb, pg_ctl) are not installed under /usr/lib/postgresql';

function run(program: string, args: string[]): void {
  const [command, commandArgs] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin!, program), ...args]] : [join(bin!, program), args];
  execFileSync(command, commandArgs, { stdio: ['ignore', 'pipe', 'pipe'], cwd: '/' });
}

export class PrivatePostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  /** initdb and start; the caller ends with destroy(). */
  static async create(): Promise<PrivatePostgres> {
    if (!bin) throw new Error(String(privatePostgresMissing));
    const dir = mkdtempSync(join(tmpdir(), 'guidon-pg-'));
    if (asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
      chownSync(dir, uid, gid);
    }
    run('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    const cluster = new PrivatePostgres(dir, await freePort());
    cluster.start();
    return cluster;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** The cluster's one database, for startServer({}, { database }). Dropping it is destroy()'s job. */
  get database(): TestDatabase {
    return { url: this.url, config: { kind: 'postgres', url: this.url }, drop: async () => undefined };
  }

  start(): void {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
    run('pg_ctl', ['-D', join(this.dir, 'data'), '-l', join(this.dir, 'log'), '-o', options, '-w', '-t', '30', 'start']);
  }

  /** mode immediate: as if the server crashed (no checkpoint); fast: a clean stop. */
  stop(mode: 'fast' | 'immediate' = 'fast'): void {
    run('pg_ctl', ['-D', join(this.dir, 'data'), '-m', mode, '-w', '-t', '30', 'stop']);
  }

  destroy(): void {
    spawnSync(asRoot ? 'runuser' : join(bin!, 'pg_ctl'), asRoot ? ['-u', 'postgres', '--', join(bin!, 'pg_ctl'), '-D', join(this.dir, 'data'), '-m', 'immediate', 'stop'] : ['-D', join(this.dir, 'data'), '-m', 'immediate', 'stop'], { stdio: 'ignore', cwd: '/' });
    rmSync(this.dir, { recursive: true, force: true });
  }
}

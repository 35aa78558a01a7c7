/**
 * A second host on this machine, in a private range: a network namespace of the test's own joined
 * to this one by a veth pair (iproute2; needs root, as in CI). A test server listens on this
 * side's address, and requests sent from the other side come from a private address that is not
 * loopback, as from a client on the office network or another container. Each test process gets
 * its own /30 in 10/8 (from its pid), so parallel runs never share addresses.
 */
import { execFile, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const clientJs = join(dirname(fileURLToPath(import.meta.url)), 'private-host-client.js');

export interface PrivateHost {
  /** This side's address: a server listening here is reached from the private host. */
  hostAddress: string;
  /** The private host's address: what the server sees as the peer. */
  clientAddress: string;
  /** Sends the requests one after another from the private host; their statuses, in order. */
  send(url: string, requests: ClientRequest[]): Promise<number[]>;
  close(): void;
}

export interface ClientRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

/** Why a private host cannot be made here, or null when it can (root, iproute2). */
export function privateHostUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'making a network namespace needs root';
  if (spawnSync('ip', ['-V']).status !== 0) return 'no ip command (apt-get install iproute2)';
  return null;
}

function ip(...args: string[]): void {
  const result = spawnSync('ip', args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`ip ${args.join(' ')}: ${result.stderr || result.error}`);
}

export function startPrivateHost(): PrivateHost {
  const id = process.pid & 0x3fffff; // 22 bits: one /30 of 10/8 each
  const base = id * 4;
  const address = (last: number) => `10.${(base >> 16) & 255}.${(base >> 8) & 255}.${(base & 255) + last}`;
  const namespace = `guidon-test-${process.pid}`;
  const [here, there] = [`gd${id}h`, `gd${id}p`];
  const hostAddress = address(1);
  const clientAddress = address(2);
  const close = () => {
    spawnSync('ip', ['netns', 'del', namespace]); // takes its end of the pair, and so the pair
    spawnSync('ip', ['link', 'del', here]);
  };
  close(); // left over by a test process of the same pid that was killed
  try {
    ip('netns', 'add', namespace);
    ip('link', 'add', here, 'type', 'veth', 'peer', 'name', there);
    ip('link', 'set', there, 'netns', namespace);
    ip('addr', 'add', `${hostAddress}/30`, 'dev', here);
    ip('link', 'set', here, 'up');
    ip('-n', namespace, 'addr', 'add', `${clientAddress}/30`, 'dev', there);
    ip('-n', namespace, 'link', 'set', there, 'up');
  } catch (error) {
    close();
    throw error;
  }
  return {
    hostAddress,
    clientAddress,
    async send(url, requests) {
      const { stdout } = await promisify(execFile)('ip', ['netns', 'exec', namespace, process.execPath, clientJs, url, JSON.stringify(requests)], { maxBuffer: 1 << 20 });
      return JSON.parse(stdout) as number[];
    },
    close,
  };
}

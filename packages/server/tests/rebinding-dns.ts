/**
 * DNS rebinding, for real: a DNS server on 127.0.0.1 (UDP, a free port) that answers A queries
 * from a script, and a way to make this process's system resolver ask it for the names of its
 * zone, as if /etc/resolv.conf pointed at it. The server under test is not told: it resolves as
 * in production (dns.lookup), and whatever it asks, the script answers.
 */
import dgram from 'node:dgram';
import dns, { type LookupAddress } from 'node:dns';
import dnsPromises from 'node:dns/promises';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import packet from 'dns-packet';

export class ScriptedDns {
  /** Every query, in order, with the address answered. */
  readonly answered: { name: string; address: string }[] = [];
  private readonly socket = dgram.createSocket('udp4');

  /** `answer(name, index)`: the address for the index-th query (from 0), answered with TTL 0. */
  constructor(private readonly answer: (name: string, index: number) => string) {
    this.socket.on('message', (message, from) => {
      const query = packet.decode(message);
      const question = query.questions?.[0];
      if (!question) return;
      const answers: packet.Answer[] = [];
      if (question.type === 'A') {
        const address = this.answer(question.name, this.answered.length);
        this.answered.push({ name: question.name, address });
        answers.push({ type: 'A', name: question.name, ttl: 0, data: address });
      }
      const reply = packet.encode({ id: query.id, type: 'response', flags: packet.RECURSION_DESIRED | packet.RECURSION_AVAILABLE, questions: query.questions, answers });
      this.socket.send(reply, from.port, from.address);
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.socket.bind(0, '127.0.0.1', resolve));
    return this;
  }

  get server(): string {
    return `127.0.0.1:${this.socket.address().port}`;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.socket.close(() => resolve()));
  }
}

const onThisMachine = (address: string) => net.isIP(address) === 4 ? address.startsWith('127.') : address === '::1';

/**
 * Until the returned function is called: names ending in `.${zone}` resolve through `dns` (the
 * callback and promise forms of dns.lookup, the system resolver of every client in this process),
 * other names as before. And no socket of this process connects off this machine: one whose
 * lookup gives another address is destroyed before it connects, with an error that says so (a
 * public answer is part of the script; the test must not send anything there).
 */
export function resolveThrough(scripted: ScriptedDns, zone: string): () => void {
  const resolver = new dns.promises.Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers([scripted.server]);
  const ours = (hostname: string) => hostname.endsWith(`.${zone}`);
  const resolve = async (hostname: string): Promise<LookupAddress[]> => (await resolver.resolve4(hostname)).map((address) => ({ address, family: 4 }));

  const originalLookup = dns.lookup;
  const originalPromiseLookup = dnsPromises.lookup;
  const originalConnect = net.Socket.prototype.connect;

  const lookup = function (hostname: string, options: unknown, callback?: unknown) {
    if (!ours(hostname)) return (originalLookup as (...args: unknown[]) => void)(hostname, options, callback);
    const done = (typeof options === 'function' ? options : callback) as (error: Error | null, address?: string | LookupAddress[], family?: number) => void;
    const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all === true;
    resolve(hostname).then(
      (addresses) => (all ? done(null, addresses) : done(null, addresses[0]!.address, 4)),
      (error: Error) => done(error),
    );
  };
  const promiseLookup = async function (hostname: string, options?: { all?: boolean }) {
    if (!ours(hostname)) return (originalPromiseLookup as (...args: unknown[]) => unknown)(hostname, options);
    const addresses = await resolve(hostname);
    return options?.all ? addresses : addresses[0];
  };
  (dns as { lookup: unknown }).lookup = lookup;
  (dnsPromises as { lookup: unknown }).lookup = promiseLookup;
  (net.Socket.prototype as { connect: unknown }).connect = function (this: net.Socket, ...args: unknown[]) {
    this.on('lookup', (error: Error | null, address: string) => {
      if (!error && !onThisMachine(address)) this.destroy(new Error(`test guard: not connecting to ${address}, off this machine`));
    });
    return (originalConnect as (...args: unknown[]) => net.Socket).apply(this, args);
  };
  syncBuiltinESMExports(); // `import { lookup } from 'node:dns'` sees the replacement too

  return () => {
    (dns as { lookup: unknown }).lookup = originalLookup;
    (dnsPromises as { lookup: unknown }).lookup = originalPromiseLookup;
    (net.Socket.prototype as { connect: unknown }).connect = originalConnect;
    syncBuiltinESMExports();
  };
}

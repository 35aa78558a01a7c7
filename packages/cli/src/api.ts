/** The calls the CLI makes to a Guidon server, and what a failed one means to a person. */
import type { ImportAnswer } from './plan.js';

export interface Problem {
  path: string;
  message: string;
}

/** A failure to report and exit 1 with: a bad setting, file or answer, with the document's problems if any. */
export class Failure extends Error {
  constructor(
    message: string,
    readonly problems: Problem[] = [],
  ) {
    super(message);
  }
}

export class GuidonApi {
  private constructor(
    private readonly base: URL,
    private readonly token: string,
    private readonly timeoutSeconds: number,
  ) {}

  /** The server and token of GUIDON_URL and GUIDON_TOKEN; `warn` gets a line to show when the token would travel in clear. */
  static fromEnvironment(env: NodeJS.ProcessEnv, warn: (line: string) => void): GuidonApi {
    const url = env.GUIDON_URL;
    if (!url) throw new Failure('GUIDON_URL is not set: the address of your Guidon server, e.g. https://flags.example.com');
    let base: URL;
    try {
      base = new URL(url.endsWith('/') ? url : `${url}/`);
    } catch {
      throw new Failure(`GUIDON_URL "${redacted(url)}" is not a URL (e.g. https://flags.example.com)`);
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Failure(`GUIDON_URL "${redacted(url)}" must start with http:// or https://`);
    // Credentials belong in GUIDON_TOKEN: in the URL they end up in messages, logs and shell history
    // (and fetch refuses them with an error that repeats the whole URL).
    if (base.username || base.password) throw new Failure(`GUIDON_URL "${redacted(url)}" carries a user or password: leave them out, the token goes in GUIDON_TOKEN`);
    // Every call replaces the query, so one here would be ignored; it may hold a secret.
    if (base.search || base.hash) throw new Failure(`GUIDON_URL "${redacted(url)}" has a query or fragment: give the server's address only, the token goes in GUIDON_TOKEN`);
    const token = env.GUIDON_TOKEN;
    if (!token) throw new Failure('GUIDON_TOKEN is not set: an API token (gdn_…) made in the dashboard under your account, or with POST /api/tokens');
    const timeout = env.GUIDON_TIMEOUT === undefined || env.GUIDON_TIMEOUT === '' ? DEFAULT_TIMEOUT_SECONDS : Number(env.GUIDON_TIMEOUT);
    if (!Number.isFinite(timeout) || timeout <= 0) throw new Failure(`GUIDON_TIMEOUT "${env.GUIDON_TIMEOUT}" is not a number of seconds above 0 (default ${DEFAULT_TIMEOUT_SECONDS})`);
    if (base.protocol === 'http:' && !isLoopback(base.hostname)) {
      warn(`warning: GUIDON_URL is plain http to ${base.host}: the token travels unencrypted, readable by anyone on the way; use https://`);
    }
    return new GuidonApi(base, token, timeout);
  }

  export(project: string, format: 'json' | 'yaml'): Promise<string> {
    return this.call('GET', `api/projects/${encodeURIComponent(project)}/export?format=${format}`);
  }

  async import(project: string, text: string, format: 'json' | 'yaml', options: { dryRun: boolean; replace: boolean }): Promise<ImportAnswer> {
    const query = `mode=${options.replace ? 'replace' : 'merge'}&dry_run=${options.dryRun}`;
    return answerOf(await this.call('POST', `api/projects/${encodeURIComponent(project)}/import?${query}`, text, format === 'json' ? 'application/json' : 'application/yaml'));
  }

  async importUnleash(project: string, body: unknown, options: { dryRun: boolean }): Promise<ImportAnswer> {
    return answerOf(await this.call('POST', `api/projects/${encodeURIComponent(project)}/import/unleash?dry_run=${options.dryRun}`, JSON.stringify(body), 'application/json'));
  }

  /** The answer's text, or a Failure that says what went wrong in words. */
  private async call(method: string, path: string, body?: string, contentType?: string): Promise<string> {
    const url = new URL(path, this.base);
    // One deadline for the whole exchange, the answer's body included: a server that stops mid-way fails too.
    const signal = AbortSignal.timeout(this.timeoutSeconds * 1000);
    const late = () => new Failure(`${this.base.origin} did not answer within ${this.timeoutSeconds} s (GUIDON_TIMEOUT sets the limit, in seconds)`);
    let answer: Response;
    try {
      answer = await fetch(url, { method, signal, headers: { authorization: `Bearer ${this.token}`, ...(contentType ? { 'content-type': contentType } : {}) }, ...(body === undefined ? {} : { body }) });
    } catch (error) {
      if (signal.aborted) throw late();
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new Failure(`cannot reach Guidon at ${this.base.origin} (${cause?.code ?? cause?.message ?? (error as Error).message}): check GUIDON_URL`);
    }
    let text: string;
    try {
      text = await bodyText(answer, url);
    } catch (error) {
      if (error instanceof Failure) throw error;
      if (signal.aborted) throw late();
      throw new Failure(`${this.base.origin} broke off its answer to ${method} ${url.pathname} (${(error as Error).message})`);
    }
    if (answer.ok) return text;
    let message = text.slice(0, 300);
    let problems: Problem[] = [];
    try {
      const parsed = JSON.parse(text) as { message?: unknown; problems?: unknown } | null;
      // Taken as text whatever their type: a server that is not Guidon gives a message, not a crash.
      if (parsed?.message !== undefined) message = String(parsed.message);
      if (Array.isArray(parsed?.problems)) problems = parsed.problems.map((problem: { path?: unknown; message?: unknown }) => ({ path: String(problem?.path), message: String(problem?.message) }));
    } catch {
      // not Guidon's JSON error: GUIDON_URL may point elsewhere
      if (answer.status === 404) throw new Failure(`${url.origin} answered 404 for ${url.pathname}: is GUIDON_URL the address of a Guidon server?`);
    }
    if (answer.status === 401) throw new Failure(`the token was refused (401 ${message}): check GUIDON_TOKEN (an API token, gdn_…, not expired nor deleted)`);
    if (answer.status === 403) throw new Failure(`not allowed (403 ${message}): importing needs an editor's or an owner's token`);
    if (answer.status === 404) throw new Failure(`not found (404 ${message}): check the project id, and that the token's user is a member of it`);
    if (problems.length > 0) throw new Failure(`the document was refused (${answer.status}): ${problems.length === 1 ? 'one problem' : `${problems.length} problems`}, nothing changed`, problems);
    throw new Failure(`${method} ${url.pathname} failed (${answer.status}): ${message}`);
  }
}

const DEFAULT_TIMEOUT_SECONDS = 30;
/** The largest answer read: an export of a large project is a few MiB; past this it is not a Guidon answer worth holding in memory. */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** The answer's body as text, read as a stream so that an endless or huge one stops at MAX_ANSWER_BYTES. */
async function bodyText(answer: Response, url: URL): Promise<string> {
  const tooLarge = () => new Failure(`${url.origin} answered more than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB for ${url.pathname}: not read further`);
  if (Number(answer.headers.get('content-length')) > MAX_ANSWER_BYTES) {
    await answer.body?.cancel();
    throw tooLarge();
  }
  if (!answer.body) return '';
  const reader = answer.body.getReader();
  const decoder = new TextDecoder();
  let size = 0;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    size += value.byteLength;
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel();
      throw tooLarge();
    }
    text += decoder.decode(value, { stream: true });
  }
}

/** An import's answer; anything but JSON (a proxy's page, say) is a Failure, not a crash. */
function answerOf(text: string): ImportAnswer {
  try {
    return JSON.parse(text) as ImportAnswer;
  } catch {
    throw new Failure('the server answered something that is not JSON: is GUIDON_URL the address of a Guidon server?');
  }
}

/**
 * GUIDON_URL as it may be shown in a message: everything between the scheme and the last @ (a user
 * and password, whatever they contain) becomes ***, and so does a query or fragment (a token,
 * perhaps). Cut by shape, not parsed, so that text which is not a URL is cut too, and the rest reads
 * as it was written.
 */
export function redacted(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:[\\/]*)?.*@/is, '$1***@').replace(/[?#].*$/s, (rest) => `${rest[0]}***`);
}

/** The hosts a plain-http token does not leave the machine for: localhost, 127.0.0.0/8 and ::1 (URL.hostname's spelling: IPv4 normalised, IPv6 bracketed). */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

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
  ) {}

  static fromEnvironment(env: NodeJS.ProcessEnv): GuidonApi {
    const url = env.GUIDON_URL;
    if (!url) throw new Failure('GUIDON_URL is not set: the address of your Guidon server, e.g. https://flags.example.com');
    let base: URL;
    try {
      base = new URL(url.endsWith('/') ? url : `${url}/`);
    } catch {
      throw new Failure(`GUIDON_URL "${url}" is not a URL (e.g. https://flags.example.com)`);
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Failure(`GUIDON_URL "${url}" must start with http:// or https://`);
    const token = env.GUIDON_TOKEN;
    if (!token) throw new Failure('GUIDON_TOKEN is not set: an API token (gdn_…) made in the dashboard under your account, or with POST /api/tokens');
    return new GuidonApi(base, token);
  }

  export(project: string, format: 'json' | 'yaml'): Promise<string> {
    return this.call('GET', `api/projects/${encodeURIComponent(project)}/export?format=${format}`);
  }

  async import(project: string, text: string, format: 'json' | 'yaml', options: { dryRun: boolean; replace: boolean }): Promise<ImportAnswer> {
    const query = `mode=${options.replace ? 'replace' : 'merge'}&dry_run=${options.dryRun}`;
    return JSON.parse(await this.call('POST', `api/projects/${encodeURIComponent(project)}/import?${query}`, text, format === 'json' ? 'application/json' : 'application/yaml')) as ImportAnswer;
  }

  async importUnleash(project: string, body: unknown, options: { dryRun: boolean }): Promise<ImportAnswer> {
    return JSON.parse(await this.call('POST', `api/projects/${encodeURIComponent(project)}/import/unleash?dry_run=${options.dryRun}`, JSON.stringify(body), 'application/json')) as ImportAnswer;
  }

  /** The answer's text, or a Failure that says what went wrong in words. */
  private async call(method: string, path: string, body?: string, contentType?: string): Promise<string> {
    const url = new URL(path, this.base);
    let answer: Response;
    try {
      answer = await fetch(url, { method, headers: { authorization: `Bearer ${this.token}`, ...(contentType ? { 'content-type': contentType } : {}) }, ...(body === undefined ? {} : { body }) });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new Failure(`cannot reach Guidon at ${this.base.origin} (${cause?.code ?? cause?.message ?? (error as Error).message}): check GUIDON_URL`);
    }
    const text = await answer.text();
    if (answer.ok) return text;
    let message = text.slice(0, 300);
    let problems: Problem[] = [];
    try {
      const parsed = JSON.parse(text) as { message?: string; problems?: Problem[] };
      message = parsed.message ?? message;
      problems = parsed.problems ?? [];
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

/**
 * guidon: a project's flags as a file, for people and pipelines (docs/flags-as-code.md).
 *
 *   guidon export --project <id> [--format json|yaml] [--out FILE]
 *   guidon import FILE --project <id> [--dry-run] [--replace] [--json]
 *   guidon import-unleash FILE... --project <id> [--segments FILE] [--dry-run] [--json]
 *
 * GUIDON_URL, GUIDON_TOKEN (an API token) and GUIDON_PROJECT come from the environment. Exit
 * codes: 0 nothing to do, or applied; 2 a dry run found changes; 1 an invalid document or a
 * failed call.
 *
 * Everything printed for a person goes through visible.ts (a document's or a server's control
 * characters are shown, not obeyed); --json is JSON with those characters escaped.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { GuidonApi, Failure } from './api.js';
import { planLines, type ImportAnswer } from './plan.js';
import { jsonText, lines } from './visible.js';

export const EXIT = { done: 0, failed: 1, changes: 2 } as const;

const HELP: Record<string, string> = {
  main: `guidon: export a Guidon project as a file, import it back, move in from Unleash.

Usage:
  guidon export --project <id> [--format json|yaml] [--out FILE]
  guidon import FILE --project <id> [--dry-run] [--replace] [--json]
  guidon import-unleash FILE... --project <id> [--segments FILE] [--dry-run] [--json]
  guidon <command> --help

Environment:
  GUIDON_URL      the Guidon server, e.g. https://flags.example.com
  GUIDON_TOKEN    an API token (gdn_…) of a member of the project (editor or owner to import)
  GUIDON_PROJECT  the project id when --project is left out
  GUIDON_TIMEOUT  seconds a call to the server may take, its answer included (default 30)

Exit codes: 0 nothing to do or applied; 2 a dry run found changes; 1 an invalid document or a failed call.
`,
  export: `guidon export --project <id> [--format json|yaml] [--out FILE]

Writes the project (environments, segments, flags) as one document, to standard output or FILE.
The same state always gives the same bytes, so a repository diff shows only real changes. On a
terminal, control characters in it are shown as escapes (\x1b…) instead.

  --project <id>   the project (default: GUIDON_PROJECT)
  --format <f>     json (default) or yaml
  --out <FILE>     write there instead of standard output
`,
  import: `guidon import FILE --project <id> [--dry-run] [--replace] [--json]

Makes the project what FILE (JSON or YAML; - reads standard input) describes, in one transaction,
and prints what changed. The server checks the whole document first: every problem is printed with
where it is, and nothing changes.

  --project <id>   the project (default: GUIDON_PROJECT)
  --dry-run        print what would change, change nothing; exit 2 when something would
  --replace        also delete the flags and segments FILE does not name (default: merge)
  --json           print the server's answer as JSON instead of a table
`,
  'import-unleash': `guidon import-unleash FILE... --project <id> [--segments FILE] [--dry-run] [--json]

Imports Unleash exports (features-batch/export, one file per environment). Everything that cannot be
mapped exactly is listed as skipped, with the reason, and is not imported.

  --project <id>     the project (default: GUIDON_PROJECT)
  --segments <FILE>  the answer of Unleash's GET /api/admin/segments: an export names segments only
                     by id, so without it the strategies that use segments are skipped
  --dry-run          print what would change, change nothing; exit 2 when something would
  --json             print the server's answer as JSON instead of a table
`,
};

const COMMON = {
  project: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The text of FILE, or standard input for `-`. */
function readInput(file: string, stdin: () => string): string {
  if (file === '-') return stdin();
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new Failure(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** JSON when it parses as JSON, else YAML (the server parses and checks it). */
const looksLikeJson = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** The process as run() sees it; out and err write exactly what they are given. */
export interface Io {
  env: NodeJS.ProcessEnv;
  out(text: string): void;
  err(text: string): void;
  stdin(): string;
  /** Whether standard output is a terminal (then an export is shown, not written as bytes). */
  terminal: boolean;
}

function projectOf(option: string | undefined, env: NodeJS.ProcessEnv): string {
  const project = option ?? env.GUIDON_PROJECT;
  if (!project) throw new Failure('no project: pass --project <id> or set GUIDON_PROJECT');
  return project;
}

/** Prints an import's answer and gives its exit code. */
function report(answer: ImportAnswer, json: boolean, io: Io): number {
  io.out(json ? jsonText(answer) : lines(...planLines(answer)));
  const changes = answer.create.length + answer.update.length + answer.delete.length;
  return answer.dry_run && changes > 0 ? EXIT.changes : EXIT.done;
}

/** Runs one command line; returns the exit code. */
export async function run(argv: string[], io: Io): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      io.out(lines(...HELP.main!.trimEnd().split('\n')));
      return command === undefined ? EXIT.failed : EXIT.done;
    }
    if (!(command in HELP) || command === 'main') throw new Failure(`unknown command "${command}" (export, import, import-unleash; guidon --help)`);
    if (rest.includes('--help') || rest.includes('-h')) {
      io.out(lines(...HELP[command]!.trimEnd().split('\n')));
      return EXIT.done;
    }
    const api = () => GuidonApi.fromEnvironment(io.env, (line) => io.err(lines(`guidon: ${line}`)));

    if (command === 'export') {
      const { values } = parseArgs({ args: rest, options: { ...COMMON, format: { type: 'string', default: 'json' }, out: { type: 'string' } }, allowPositionals: false });
      if (values.format !== 'json' && values.format !== 'yaml') throw new Failure(`--format must be json or yaml, not "${values.format}"`);
      const text = await api().export(projectOf(values.project, io.env), values.format);
      // The document is data: a file or a pipe gets the server's exact bytes; a terminal, a view of them.
      if (values.out) writeFileSync(values.out, text);
      else io.out(io.terminal ? lines(...text.replace(/\n$/, '').split('\n')) : text);
      return EXIT.done;
    }

    if (command === 'import') {
      const { values, positionals } = parseArgs({ args: rest, options: { ...COMMON, 'dry-run': { type: 'boolean' }, replace: { type: 'boolean' }, json: { type: 'boolean' } }, allowPositionals: true });
      if (positionals.length !== 1) throw new Failure('import takes one FILE (- for standard input)');
      const text = readInput(positionals[0]!, io.stdin);
      const answer = await api().import(projectOf(values.project, io.env), text, looksLikeJson(text) ? 'json' : 'yaml', { dryRun: values['dry-run'] === true, replace: values.replace === true });
      return report(answer, values.json === true, io);
    }

    const { values, positionals } = parseArgs({ args: rest, options: { ...COMMON, segments: { type: 'string' }, 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } }, allowPositionals: true });
    if (positionals.length === 0) throw new Failure('import-unleash takes one or more FILEs (Unleash exports)');
    const parse = (file: string) => {
      try {
        return JSON.parse(readInput(file, io.stdin)) as unknown;
      } catch (error) {
        if (error instanceof Failure) throw error;
        throw new Failure(`${file} is not JSON: ${(error as Error).message}`);
      }
    };
    const exports = positionals.map(parse);
    const body = { exports, ...(values.segments ? { segments: parse(values.segments) } : {}) };
    const answer = await api().importUnleash(projectOf(values.project, io.env), body, { dryRun: values['dry-run'] === true });
    return report(answer, values.json === true, io);
  } catch (error) {
    if (error instanceof Failure) {
      io.err(lines(`guidon: ${error.message}`, ...error.problems.map((problem) => `  ${problem.message}`)));
      return EXIT.failed;
    }
    if (error instanceof TypeError && /parseArgs|argument|option/i.test(String((error as { code?: string }).code ?? error.message))) {
      io.err(lines(`guidon: ${error.message} (guidon ${command} --help)`));
      return EXIT.failed;
    }
    throw error;
  }
}


import { useId, useRef, useState, type ChangeEvent, type ReactNode } from 'react';
import type { Project } from '../../api/client';
import { DocumentRefused, exportDocument, useImportDocument, useImportUnleash, type DocumentFormat, type ImportPlan, type PlanItem, type UnleashAnswer } from '../../api/flagsAsCode';
import { reasonFor } from '../../api/roles';
import { Outcome } from '../../components/FormError';
import { RoleNote } from '../../components/RoleNote';

/**
 * Project settings: the project as a file (docs/flags-as-code.md). Export for anyone who may see the
 * project; import (a document, or Unleash exports) for editors, always checked first: the plan is
 * shown as the lists of what would be created, updated and deleted, then applied on request.
 */
export function FlagsAsCode({ project }: { project: Project }) {
  const canImport = project.role === 'owner' || project.role === 'editor';
  return (
    <>
      <ExportPanel project={project} />
      {!canImport && <RoleNote need="editor" what="import flags into the project" />}
      <ImportPanel project={project} canImport={canImport} />
      <UnleashPanel project={project} canImport={canImport} />
    </>
  );
}

/** A slug of the project's name for file names. */
const fileName = (project: Project, format: DocumentFormat) => `${project.name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'project'}-flags.${format}`;

function ExportPanel({ project }: { project: Project }) {
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const download = async (format: DocumentFormat) => {
    setOutcome(null);
    try {
      const text = await exportDocument(project.id, format);
      const url = URL.createObjectURL(new Blob([text], { type: format === 'json' ? 'application/json' : 'application/yaml' }));
      const link = document.createElement('a');
      link.href = url;
      link.download = fileName(project, format);
      link.click();
      URL.revokeObjectURL(url);
      setOutcome({ ok: true, text: `Downloaded ${link.download}` });
    } catch (error) {
      setOutcome({ ok: false, text: (error as Error).message });
    }
  };
  return (
    <section className="panel" aria-labelledby="export-heading">
      <h2 id="export-heading">Export</h2>
      <p className="muted">
        The project's environments, segments and flags as one file. The same flags always give the same file, so it can live in a git repository and show only real
        changes; the command line tool <code>guidon</code> exports and imports it from a pipeline.
      </p>
      <div className="actions start">
        <button type="button" className="secondary" onClick={() => void download('json')}>
          Download JSON
        </button>
        <button type="button" className="secondary" onClick={() => void download('yaml')}>
          Download YAML
        </button>
      </div>
      <Outcome message={outcome} />
    </section>
  );
}

/** The text of a chosen file. */
const readFile = (file: File) => file.text();

function ImportPanel({ project, canImport }: { project: Project; canImport: boolean }) {
  const importing = useImportDocument(project.id);
  const id = useId();
  const [text, setText] = useState('');
  const [mode, setMode] = useState<'merge' | 'replace'>('merge');
  const [plan, setPlan] = useState<ImportPlan | null>(null);
  const [refused, setRefused] = useState<DocumentRefused | Error | null>(null);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const changed = (next: () => void) => {
    next();
    setPlan(null);
    setRefused(null);
    setOutcome(null);
  };
  // A file is read in the background: a check pressed before its text reached the state uses the read itself.
  const fileRead = useRef<Promise<string> | null>(null);
  const run = async (dryRun: boolean) => {
    setRefused(null);
    setOutcome(null);
    try {
      const document = fileRead.current ? await fileRead.current : text;
      if (!document.trim()) return setRefused(new Error('Choose a file or paste a document first'));
      const answer = await importing.mutateAsync({ text: document, mode, dryRun });
      if (dryRun) setPlan(answer);
      else {
        setPlan(null);
        setOutcome({ ok: true, text: `Imported: ${summary(answer, 'done')}.` });
      }
    } catch (error) {
      setPlan(null);
      setRefused(error as Error);
    }
  };
  const onFile = (event: ChangeEvent<HTMLInputElement>) => {
    const file = event.target.files?.[0];
    if (!file) return;
    const read = readFile(file);
    fileRead.current = read;
    read.then(
      (content) => fileRead.current === read && changed(() => setText(content)),
      (error: Error) => fileRead.current === read && setRefused(error),
    );
  };
  // Typing replaces a chosen file that is still being read.
  const onText = (value: string) => {
    fileRead.current = null;
    changed(() => setText(value));
  };
  return (
    <section className="panel" aria-labelledby="import-heading">
      <h2 id="import-heading">Import</h2>
      <p className="muted">A file as Export writes it (JSON or YAML). It is checked whole first, and you see what would change before anything does.</p>
      <fieldset className="plain" disabled={!canImport}>
        <div className="field">
          <label htmlFor={`${id}-file`}>Document file</label>
          <input id={`${id}-file`} type="file" accept=".json,.yaml,.yml,application/json,application/yaml" onChange={onFile} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-text`}>Or paste the document</label>
          <textarea id={`${id}-text`} className="code" rows={8} value={text} spellCheck={false} onChange={(event) => onText(event.target.value)} />
        </div>
        <fieldset className="radio-list">
          <legend>Flags and segments the document does not name</legend>
          <label className="checkbox">
            <input type="radio" name={`${id}-mode`} checked={mode === 'merge'} onChange={() => changed(() => setMode('merge'))} /> Keep them (merge)
          </label>
          <label className="checkbox">
            <input type="radio" name={`${id}-mode`} checked={mode === 'replace'} onChange={() => changed(() => setMode('replace'))} /> Delete them (replace)
          </label>
        </fieldset>
        <div className="actions start">
          <button type="button" onClick={() => void run(true)} title={canImport ? undefined : reasonFor('editor')} disabled={importing.isPending}>
            Check the import
          </button>
        </div>
      </fieldset>
      <Refusal error={refused} />
      {plan && <PlanView plan={plan} onApply={() => void run(false)} pending={importing.isPending} />}
      <Outcome message={outcome} />
    </section>
  );
}

/** A chosen Unleash file, parsed. */
type ChosenFile = { name: string; value: unknown };

function UnleashPanel({ project, canImport }: { project: Project; canImport: boolean }) {
  const importing = useImportUnleash(project.id);
  const id = useId();
  // The chosen files as their reads: a check pressed while one is still being read waits for it.
  const chosen = useRef({ exports: Promise.resolve<ChosenFile[]>([]), segments: Promise.resolve<ChosenFile[]>([]) });
  const [answer, setAnswer] = useState<UnleashAnswer | null>(null);
  const [refused, setRefused] = useState<Error | null>(null);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const parsed = async (file: File): Promise<ChosenFile> => {
    try {
      return { name: file.name, value: JSON.parse(await readFile(file)) as unknown };
    } catch {
      throw new Error(`${file.name} is not JSON: an Unleash export is a JSON file`);
    }
  };
  const choose = (files: FileList | null, into: 'exports' | 'segments') => {
    setAnswer(null);
    setOutcome(null);
    setRefused(null);
    const read = Promise.all([...(files ?? [])].map(parsed));
    chosen.current[into] = read;
    read.catch((error: Error) => setRefused(error));
  };
  const run = async (dryRun: boolean) => {
    setRefused(null);
    setOutcome(null);
    try {
      const [exports, [segments]] = await Promise.all([chosen.current.exports, chosen.current.segments]);
      if (exports.length === 0) return setRefused(new Error('Choose one or more Unleash export files first'));
      const result = await importing.mutateAsync({ exports: exports.map((file) => file.value), segments: segments?.value ?? null, dryRun });
      if (dryRun) setAnswer(result);
      else {
        setAnswer(null);
        setOutcome({ ok: true, text: `Imported from Unleash: ${summary(result, 'done')}.` });
      }
    } catch (error) {
      setAnswer(null);
      setRefused(error as Error);
    }
  };
  return (
    <section className="panel" aria-labelledby="unleash-heading">
      <h2 id="unleash-heading">Import from Unleash</h2>
      <p className="muted">
        Unleash exports (one file per environment, from its features export). Users keep their buckets and variants: what cannot be mapped exactly is not imported, and
        listed with the reason.
      </p>
      <fieldset className="plain" disabled={!canImport}>
        <div className="field">
          <label htmlFor={`${id}-exports`}>Unleash export files</label>
          <input id={`${id}-exports`} type="file" multiple accept=".json,application/json" onChange={(event) => choose(event.target.files, 'exports')} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-segments`}>Segments file (optional)</label>
          <input id={`${id}-segments`} type="file" accept=".json,application/json" aria-describedby={`${id}-segments-hint`} onChange={(event) => choose(event.target.files, 'segments')} />
          <p className="hint" id={`${id}-segments-hint`}>
            The answer of Unleash's GET /api/admin/segments. An export names segments only by id, so without it the strategies that use segments are skipped.
          </p>
        </div>
        <div className="actions start">
          <button type="button" onClick={() => void run(true)} title={canImport ? undefined : reasonFor('editor')} disabled={importing.isPending}>
            Check the Unleash import
          </button>
        </div>
      </fieldset>
      <Refusal error={refused} />
      {answer && (
        <PlanView plan={answer} onApply={() => void run(false)} pending={importing.isPending}>
          <Skipped skipped={answer.skipped} />
        </PlanView>
      )}
      <Outcome message={outcome} />
    </section>
  );
}

function summary(plan: ImportPlan, tense: 'would' | 'done') {
  const verbs = tense === 'done' ? ['created', 'updated', 'deleted'] : ['to create', 'to update', 'to delete'];
  const counts = `${plan.create.length} ${verbs[0]}, ${plan.update.length} ${verbs[1]}, ${plan.delete.length} ${verbs[2]}, ${plan.unchanged} unchanged`;
  // An environment that needs approvals gets a change request instead (docs/flags-as-code.md).
  const reviewed = plan.change_requests.map((request) => request.environment).join(', ');
  if (!reviewed) return counts;
  return `${counts}; the changes to ${reviewed} ${tense === 'done' ? 'await approval in a change request (Change requests page)' : 'need approval: applying makes a change request of them'}`;
}

/** The server's refusal: its message, and each problem of the document with where it is. */
function Refusal({ error }: { error: Error | null }) {
  if (!error) return null;
  return (
    <div role="alert" className="error-block">
      <p className="error">{error.message}</p>
      {error instanceof DocumentRefused && (
        <ul className="problems" aria-label="Problems in the document">
          {error.problems.map((problem) => (
            <li key={`${problem.path} ${problem.message}`}>
              <code>{problem.path || '(the document)'}</code> {problem.message.startsWith(`${problem.path}`) ? problem.message.slice(problem.path.length).replace(/^[:\s]+/, '') : problem.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

const itemText = (item: PlanItem) => {
  const what = item.resource === 'flag' ? `Flag ${item.key} in ${item.environment}` : `${item.resource === 'segment' ? 'Segment' : 'Environment'} ${item.key}`;
  return item.fields.length > 0 ? `${what}: ${item.fields.map((field) => field.replace(/_/g, ' ')).join(', ')}` : what;
};

/** What an import would do, as three lists, and the button that does it. */
function PlanView({ plan, onApply, pending, children }: { plan: ImportPlan; onApply: () => void; pending: boolean; children?: ReactNode }) {
  const changes = plan.create.length + plan.update.length + plan.delete.length;
  const lists = [
    { title: 'Creates', items: plan.create },
    { title: 'Updates', items: plan.update },
    { title: 'Deletes', items: plan.delete },
  ];
  return (
    <div className="plan" role="region" aria-label="Import plan">
      <p role="status">{changes === 0 ? `Nothing to change: ${plan.unchanged} unchanged.` : `Would change: ${summary(plan, 'would')}.`}</p>
      {lists
        .filter((list) => list.items.length > 0)
        .map((list) => (
          <div key={list.title}>
            <h3>
              {list.title} ({list.items.length})
            </h3>
            <ul aria-label={list.title}>
              {list.items.map((item) => (
                <li key={`${item.resource} ${item.environment} ${item.key}`}>{itemText(item)}</li>
              ))}
            </ul>
          </div>
        ))}
      {children}
      {changes > 0 && (
        <div className="actions start">
          <button type="button" className={plan.delete.length > 0 ? 'danger' : undefined} onClick={onApply} disabled={pending}>
            Apply the import
          </button>
        </div>
      )}
    </div>
  );
}

function Skipped({ skipped }: { skipped: UnleashAnswer['skipped'] }) {
  if (skipped.length === 0) return <p className="muted">Nothing skipped: everything maps exactly.</p>;
  return (
    <div>
      <h3>Skipped ({skipped.length})</h3>
      <p className="muted">Not imported, because it could not be mapped exactly.</p>
      <div className="table-wrap" tabIndex={0} role="region" aria-label="Skipped, scrollable">
      <table aria-label="Skipped">
        <thead>
          <tr>
            <th scope="col">Feature</th>
            <th scope="col">Environment</th>
            <th scope="col">What</th>
            <th scope="col">Why</th>
          </tr>
        </thead>
        <tbody>
          {skipped.map((entry, i) => (
            <tr key={i}>
              <td>{entry.feature ?? '—'}</td>
              <td>{entry.environment ?? '—'}</td>
              <td>{entry.what}</td>
              <td>{entry.reason}</td>
            </tr>
          ))}
        </tbody>
      </table>
      </div>
    </div>
  );
}

import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import type { Environment, Flag } from '../../api/client';
import { useSavePrerequisites } from '../../api/flags';
import { useProjectFlags } from '../../api/queries';
import { FormError } from '../../components/FormError';

type Prerequisite = Flag['prerequisites'][number];

/** "needs payments on", "needs experiment serving b or c", "needs legacy off". */
export function describePrerequisite(p: Prerequisite): string {
  if (!p.enabled) return `${p.flag_key} off`;
  return p.variants && p.variants.length > 0 ? `${p.flag_key} serving ${p.variants.join(' or ')}` : `${p.flag_key} on`;
}

/**
 * The flags of the environment this one needs (docs/prerequisites.md): listed in order, removed
 * one by one, added by picking a flag, the state it must have and, for a flag with variants,
 * which of them. The server checks the whole (self, cycles, depth): its refusal is shown here.
 * Below, the flags that need this one, which keep it from being deleted or re-keyed.
 */
export function PrerequisitesEditor({ projectId, environment, flag, readOnly, saveLabel = 'Add prerequisite' }: { projectId: string; environment: Environment; flag: Flag; readOnly: boolean; saveLabel?: string | undefined }) {
  const save = useSavePrerequisites(projectId, environment.id, flag.id);
  const overview = useProjectFlags(projectId);
  const inEnvironment = (overview.data ?? []).filter((row) => row.environments[environment.key] !== undefined);
  const candidates = inEnvironment.filter((row) => row.key !== flag.key && !flag.prerequisites.some((p) => p.flag_key === row.key));
  const dependents = inEnvironment.filter((row) => row.environments[environment.key]!.prerequisites.some((p) => p.flag_key === flag.key));
  const [parent, setParent] = useState('');
  const [state, setState] = useState<'on' | 'off'>('on');
  const [variants, setVariants] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState('');
  const parentVariants = inEnvironment.find((row) => row.key === parent)?.environments[environment.key]?.variants ?? [];

  const write = async (prerequisites: Prerequisite[], done: string) => {
    setError(null);
    setStatus('');
    try {
      await save.mutateAsync({ prerequisites });
      setStatus(done);
      return true;
    } catch (caught) {
      setError(`Not saved: ${(caught as Error).message}`);
      return false;
    }
  };
  const add = async (event: FormEvent) => {
    event.preventDefault();
    if (parent === '') return setError('Pick the flag this one needs');
    const entry: Prerequisite = state === 'on' && variants.length > 0 ? { flag_key: parent, enabled: true, variants } : { flag_key: parent, enabled: state === 'on' };
    if (await write([...flag.prerequisites, entry], `Added: needs ${describePrerequisite(entry)}`)) {
      setParent('');
      setVariants([]);
      setState('on');
    }
  };

  return (
    <section className="panel" aria-labelledby="prerequisites-heading">
      <h3 id="prerequisites-heading">Prerequisites</h3>
      <p className="muted small">
        While any of these is not met for a user, {flag.key} is off for them with the reason "Prerequisite … not met", before its rules are consulted. They are checked in this order.
      </p>
      {flag.prerequisites.length === 0 ? (
        <p className="muted">{flag.key} needs no other flag.</p>
      ) : (
        <ul className="plain-list" aria-label={`Prerequisites of ${flag.key}`}>
          {flag.prerequisites.map((p) => (
            <li key={p.flag_key} className="cell">
              <span>
                Needs <code>{p.flag_key}</code> {p.enabled ? (p.variants ? `serving ${p.variants.join(' or ')}` : 'on') : 'off'}
                {!inEnvironment.some((row) => row.key === p.flag_key) && overview.data && <span className="badge stale">not in {environment.name}: never met</span>}
              </span>
              {!readOnly && (
                <button type="button" className="secondary small" aria-label={`Remove prerequisite ${p.flag_key}`} onClick={() => void write(flag.prerequisites.filter((other) => other.flag_key !== p.flag_key), `Removed ${p.flag_key}`)}>
                  Remove
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      {!readOnly && (
        <form onSubmit={add} noValidate className="inline-form" aria-label="Add a prerequisite">
          <div className="field">
            <label htmlFor="prerequisite-flag">Flag it needs</label>
            <select id="prerequisite-flag" value={parent} onChange={(event) => (setParent(event.target.value), setVariants([]))}>
              <option value="">Pick a flag of {environment.name}</option>
              {candidates.map((row) => (
                <option key={row.key} value={row.key}>
                  {row.key}
                </option>
              ))}
            </select>
          </div>
          <fieldset className="segmented">
            <legend>It must be</legend>
            {(['on', 'off'] as const).map((value) => (
              <label key={value} className={state === value ? 'selected' : ''}>
                <input type="radio" name="prerequisite-state" value={value} checked={state === value} onChange={() => (setState(value), setVariants([]))} />
                {value === 'on' ? 'On' : 'Off'}
              </label>
            ))}
          </fieldset>
          {state === 'on' && parentVariants.length > 0 && (
            <fieldset className="plain">
              <legend>Serving one of (none ticked: any)</legend>
              {parentVariants.map((variant) => (
                <label key={variant.key} className="checkbox">
                  <input type="checkbox" checked={variants.includes(variant.key)} onChange={(event) => setVariants(event.target.checked ? [...variants, variant.key] : variants.filter((key) => key !== variant.key))} /> {variant.key}
                </label>
              ))}
            </fieldset>
          )}
          <div className="actions start">
            <button type="submit">{saveLabel}</button>
          </div>
        </form>
      )}
      <FormError message={error} />
      <p role="status" className="muted">
        {status}
      </p>
      <h4>Flags that need {flag.key}</h4>
      {dependents.length === 0 ? (
        <p className="muted">No flag of {environment.name} needs it.</p>
      ) : (
        <>
          <ul aria-label={`Flags that need ${flag.key}`}>
            {dependents.map((row) => (
              <li key={row.key}>
                <Link to={`/projects/${projectId}/flags/${environment.id}/${row.environments[environment.key]!.flag_id}`}>{row.key}</Link>
              </li>
            ))}
          </ul>
          <p className="muted small">While they name it, {flag.key} cannot be deleted or given another key: remove it from their prerequisites first.</p>
        </>
      )}
    </section>
  );
}

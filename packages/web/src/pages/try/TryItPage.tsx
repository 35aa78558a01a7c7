import { useState, type FormEvent } from 'react';
import { useParams } from 'react-router';
import { api, unwrap, type Rule } from '../../api/client';
import { useEnvironments, useProject } from '../../api/queries';
import { Field } from '../../components/Field';
import { ErrorState, Loading } from '../../components/States';
import { FormError } from '../../components/FormError';
import { useFocusAfterRemoval } from '../../components/useFocusAfterRemoval';
import { ruleCondition } from '../targeting/conditions';

/** A flag's answer from evaluate (variant and value only for a flag with variants, docs/variants.md), and which rule served from explain. */
type FlagAnswer = { enabled: boolean; reason: string; variant?: string; value?: unknown; rule?: ServingRule | null };
type Answer = Record<string, FlagAnswer>;
type ServingRule = Pick<Rule, 'id' | 'priority' | 'rule_type' | 'rule_value' | 'conditions' | 'serve' | 'rollout_percentage'> & { position: number };
type Attribute = { name: string; value: string };

/** A value as an app would send it: a number or boolean when it reads as one, else the text. */
export function typedValue(text: string): string | number | boolean {
  const trimmed = text.trim();
  if (trimmed === 'true' || trimmed === 'false') return trimmed === 'true';
  const number = Number(trimmed);
  return trimmed !== '' && Number.isFinite(number) ? number : text;
}

const customAttributes = (rows: Attribute[]) => {
  const named = rows.filter((row) => row.name.trim() !== '');
  return named.length === 0 ? null : Object.fromEntries(named.map((row) => [row.name.trim(), typedValue(row.value)]));
};

/** "Rule 2: country is one of DE, FR", or "No rule: <reason>". */
export function servedBy(answer: FlagAnswer): string {
  return answer.rule ? `Rule ${answer.rule.position}: ${ruleCondition(answer.rule)}` : `No rule: ${answer.reason}`;
}

/** A variant's value as compact JSON (a string in quotes). */
const compact = (value: unknown) => JSON.stringify(value);

/**
 * Calls the real POST /sdk/v1/evaluate with the project's SDK key, as an app would, and the
 * dashboard's explain endpoint for the same context: which rule served each flag.
 */
export function TryItPage() {
  const { projectId = '' } = useParams();
  const project = useProject(projectId);
  const environments = useEnvironments(projectId);
  const [environment, setEnvironment] = useState('');
  const [userId, setUserId] = useState('');
  const [userEmail, setUserEmail] = useState('');
  const [attributes, setAttributes] = useState<Attribute[]>([]);
  const [answer, setAnswer] = useState<Answer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  if (project.isPending || environments.isPending) return <Loading what="the project" />;
  if (project.error || environments.error) return <ErrorState error={project.error ?? environments.error} />;
  const envs = environments.data ?? [];
  const envKey = environment || envs[0]?.key || '';
  /** Variant and value columns only when some flag serves values (boolean flags answer without them). */
  const withVariants = answer !== null && Object.values(answer).some((flag) => flag.variant !== undefined);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const context = { user_id: userId.trim() || null, user_email: userEmail.trim() || null, custom_attributes: customAttributes(attributes) };
      const envId = envs.find((env) => env.key === envKey)?.id ?? '';
      const [result, explained] = await Promise.all([
        unwrap(api.POST('/sdk/v1/evaluate', { headers: { 'x-sdk-key': project.data?.sdk_key ?? '' }, body: { environment: envKey, context } })),
        unwrap(api.POST('/api/projects/{project_id}/environments/{env_id}/explain', { params: { path: { project_id: projectId, env_id: envId } }, body: { context } })),
      ]);
      setAnswer(Object.fromEntries(Object.entries(result.flags).map(([key, flag]) => [key, { ...flag, rule: explained.flags[key]?.rule ?? null }])));
    } catch (caught) {
      setAnswer(null);
      setError((caught as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="stack">
      <section className="panel">
        <h2>Try it</h2>
        <p className="muted">Ask the evaluate endpoint, with this project's SDK key, what a user gets. It is a real evaluation: it shows up in the usage history. Which rule served is worked out apart from it by the dashboard, and that is not recorded anywhere.</p>
        <form onSubmit={submit} noValidate className="inline-form">
          <div className="field">
            <label htmlFor="try-env">Environment</label>
            <select id="try-env" value={envKey} onChange={(event) => setEnvironment(event.target.value)}>
              {envs.map((env) => (
                <option key={env.id} value={env.key}>
                  {env.name}
                </option>
              ))}
            </select>
          </div>
          <Field label="user_id" value={userId} onChange={setUserId} placeholder="user-42" autoComplete="off" maxLength={1024} />
          <Field label="user_email" type="email" value={userEmail} onChange={setUserEmail} placeholder="ada@example.com" autoComplete="off" maxLength={1024} />
          <AttributeRows rows={attributes} onChange={setAttributes} />
          <div className="actions start">
            <button type="submit" disabled={busy || !envKey}>
              Evaluate
            </button>
          </div>
        </form>
      </section>
      <FormError message={error} />
      {answer && (
        <section className="panel" aria-live="polite">
          <h3>Answer for {envKey}</h3>
          {Object.keys(answer).length === 0 ? (
            <p className="state">This environment has no flags yet.</p>
          ) : (
            // Focusable: on a phone the table scrolls sideways, and a keyboard must reach what is off screen.
            <div className="table-wrap" tabIndex={0} role="region" aria-label="Evaluated flags, scrollable">
              <table className="plain">
                <caption className="visually-hidden">Evaluated flags</caption>
                <thead>
                  <tr>
                    <th scope="col">Flag</th>
                    <th scope="col">Enabled</th>
                    <th scope="col">Reason</th>
                    <th scope="col">Served by</th>
                    {withVariants && <th scope="col">Variant</th>}
                    {withVariants && <th scope="col">Value</th>}
                  </tr>
                </thead>
                <tbody>
                  {Object.entries(answer).map(([key, value]) => (
                    <tr key={key}>
                      <th scope="row">
                        <code>{key}</code>
                      </th>
                      <td>
                        <span className={`badge ${value.enabled ? 'on' : 'off'}`}>{value.enabled ? 'On' : 'Off'}</span>
                      </td>
                      <td>{value.reason}</td>
                      <td>{servedBy(value)}</td>
                      {withVariants && <td>{value.variant === undefined ? '—' : <code>{value.variant}</code>}</td>}
                      {withVariants && <td>{value.variant === undefined ? '—' : <code className="json">{compact(value.value)}</code>}</td>}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </section>
      )}
    </div>
  );
}

/** Custom attributes as name and value rows (docs/targeting.md); a value that reads as a number or true/false is sent as one. */
function AttributeRows({ rows, onChange }: { rows: Attribute[]; onChange: (rows: Attribute[]) => void }) {
  const set = (index: number, changes: Partial<Attribute>) => onChange(rows.map((row, i) => (i === index ? { ...row, ...changes } : row)));
  // After Remove: the name of the row that took its place, else "Add attribute".
  const { container, removedAt } = useFocusAfterRemoval<HTMLFieldSetElement>({ row: '.attribute-row', field: 'input', fallback: '.add-attribute' });
  return (
    <fieldset className="attributes" ref={container}>
      <legend>Custom attributes</legend>
      {rows.length === 0 && <p className="hint">None: add the attributes your app sends, such as plan or app_version.</p>}
      {rows.map((row, index) => (
        <div key={index} className="attribute-row">
          <Field label={`Name of attribute ${index + 1}`} value={row.name} onChange={(name) => set(index, { name })} placeholder="plan" autoComplete="off" maxLength={64} />
          <Field label={`Value of attribute ${index + 1}`} value={row.value} onChange={(value) => set(index, { value })} placeholder="beta" autoComplete="off" maxLength={1024} />
          <button type="button" className="secondary small" onClick={() => {
              onChange(rows.filter((_, i) => i !== index));
              removedAt(index);
            }} aria-label={`Remove attribute ${index + 1}`}>
            Remove
          </button>
        </div>
      ))}
      <p className="hint">A value that reads as a number, true or false is sent as one; anything else as text.</p>
      <button type="button" className="secondary small add-attribute" disabled={rows.length >= 100} onClick={() => onChange([...rows, { name: '', value: '' }])}>
        Add attribute
      </button>
    </fieldset>
  );
}

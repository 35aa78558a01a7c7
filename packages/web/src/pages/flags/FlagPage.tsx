import { lazy, Suspense, useEffect, useState, type FormEvent } from 'react';
import * as Slider from '@radix-ui/react-slider';
import { Link, useNavigate, useParams, useSearchParams } from 'react-router';
import { ApiError, type Environment, type Flag } from '../../api/client';
import { useEnvironments, useFlag, useProjectFlags } from '../../api/queries';
import { useCopyFlag, useDeleteFlag, useSetEnabled, useUpdateFlag } from '../../api/flags';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { Field } from '../../components/Field';
import { FlagSwitch } from '../../components/FlagSwitch';
import { ErrorState, Loading } from '../../components/States';
import { ago, evaluatedAgo, isStale } from '../../components/time';
import { RulesEditor } from './RulesEditor';
import { VariantsEditor } from './VariantsEditor';
import { PrerequisitesEditor } from './PrerequisitesEditor';
import { reasonFor, useRole } from '../../api/roles';
import { RoleNote } from '../../components/RoleNote';
import { AuditList } from '../audit/AuditList';
import { FormError, Outcome } from '../../components/FormError';
import { useDraft, withDraft } from '../../api/drafts';
import { DraftPanel } from '../changes/DraftPanel';
import { SchedulesPanel } from './SchedulesPanel';
import { ReleasePanel } from './ReleasePanel';
import { isLive, useReleases } from '../../api/releases';

const FlagChart = lazy(() => import('../usage/FlagChart'));

export function FlagPage() {
  const { projectId = '', envId = '', flagId = '' } = useParams();
  const flag = useFlag(projectId, envId, flagId);
  const environments = useEnvironments(projectId);
  if (flag.isPending || environments.isPending) return <Loading what="the flag" />;
  if (flag.error || environments.error || !flag.data) return <ErrorState error={flag.error ?? environments.error} retry={() => void flag.refetch()} />;
  const environment = environments.data?.find((env) => env.id === envId);
  if (!environment) return <ErrorState error={new Error('Environment not found')} />;
  return <FlagView key={flag.data.id} stored={flag.data} environment={environment} environments={environments.data ?? []} />;
}

function FlagView({ stored, environment, environments }: { stored: Flag; environment: Environment; environments: Environment[] }) {
  const projectId = stored.project_id;
  // In an environment that needs approval, edits go into the draft change request: shown here as they would be.
  const reviewed = environment.approvals_required > 0;
  const draft = useDraft(projectId, environment.id);
  const flag = reviewed ? withDraft(stored, draft) : stored;
  const update = useUpdateFlag(projectId, environment.id, flag.id);
  const navigate = useNavigate();
  const remove = useDeleteFlag(projectId, environment.id, flag.id, () => navigate(`/projects/${projectId}`, { replace: true, flushSync: true }));
  const setEnabled = useSetEnabled(projectId);
  const overview = useProjectFlags(projectId);
  const row = overview.data?.find((item) => item.key === flag.key);
  const state = row?.environments[environment.key];
  const [rollout, setRollout] = useState(flag.rollout_percentage);
  const [rolloutError, setRolloutError] = useState<string | null>(null);
  const [deleting, setDeleting] = useState(false);
  const [params] = useSearchParams();
  const showHistory = params.get('view') === 'history';
  const { can } = useRole(projectId);
  const canEdit = can('editor');
  // While a guarded release is live it alone sets the rollout (the server refuses a change by hand).
  const releases = useReleases(projectId, environment.id, stored.id);
  const releasing = releases.data?.[0] !== undefined && isLive(releases.data[0]);
  const rolloutLocked = !canEdit || releasing;
  useEffect(() => setRollout(flag.rollout_percentage), [flag.rollout_percentage]);

  const save = async (changes: Partial<Pick<Flag, 'name' | 'description' | 'rollout_percentage' | 'everyone_else' | 'bucketing_key'>>) => void (await update.mutateAsync(changes));
  const saveLabel = reviewed ? 'Add to request' : undefined;
  const saveRollout = async (value: number) => {
    if (!Number.isInteger(value) || value < 0 || value > 100) return setRolloutError('A whole number from 0 to 100');
    setRolloutError(null);
    try {
      await save({ rollout_percentage: value });
    } catch (error) {
      setRolloutError((error as Error).message);
      setRollout(flag.rollout_percentage);
    }
  };

  return (
    <div className="stack">
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to={`/projects/${projectId}`}>Flags</Link> <span aria-hidden="true">/</span> <span>{flag.key}</span>
      </nav>
      <div className="page-head">
        <div>
          <h2>
            {flag.name} <code className="flag-key">{flag.key}</code>
            {state && isStale(state.updated_at, state.last_evaluated_at) && <span className="badge stale">stale</span>}
          </h2>
          <p className="muted">
            In {environment.name} · last evaluated {evaluatedAgo(state?.last_evaluated_at ?? null)} · changed {ago(flag.updated_at)}
          </p>
        </div>
        <nav aria-label="Environments of this flag" className="env-switch">
          {environments.map((env) => {
            const other = row?.environments[env.key];
            if (env.id === environment.id) return <span key={env.id} className="tab active" aria-current="page">{env.name}</span>;
            return other ? (
              <Link key={env.id} className="tab" to={`/projects/${projectId}/flags/${env.id}/${other.flag_id}`}>
                {env.name}
              </Link>
            ) : (
              <span key={env.id} className="tab absent" title={`Not in ${env.name}: copy it there below`}>
                {env.name}
                <span className="visually-hidden"> (not in {env.name}: copy it there below)</span>
              </span>
            );
          })}
        </nav>
      </div>
      <nav aria-label="Flag views" className="tabs sub-tabs">
        <Link to="?" className={showHistory ? 'tab' : 'tab active'} aria-current={showHistory ? undefined : 'page'}>
          Settings
        </Link>
        <Link to="?view=history" className={showHistory ? 'tab active' : 'tab'} aria-current={showHistory ? 'page' : undefined}>
          History
        </Link>
      </nav>
      {showHistory ? (
        <section className="panel">
          <h3>History of {flag.key} in {environment.name}</h3>
          <AuditList projectId={projectId} filters={{ resource_type: 'flag', resource_id: flag.id }} emptyText="Changes to this flag appear here: who switched it, when, and what changed." />
        </section>
      ) : (
        <>
          {!canEdit && <RoleNote need="editor" what="switch or change this flag" />}
          {reviewed && (
            <p className="notice" id="reviewed-note">
              Changes to {environment.name} need {environment.approvals_required === 1 ? 'an approval' : `${environment.approvals_required} approvals`} from other members. What you change here is collected in a draft change request; nothing is applied until it is approved. <Link to={`/projects/${projectId}/change-requests`}>Change requests</Link>
            </p>
          )}
          {reviewed && <DraftPanel projectId={projectId} environment={environment} />}
          <section className="panel">
            <h3>Serving</h3>
            <div className="serving">
              <div className="switch-row">
                <FlagSwitch flagKey={flag.key} environment={environment.name} checked={flag.enabled} disabled={!canEdit} reasonId="role-note-editor" onChange={(enabled) => setEnabled.mutate({ envId: environment.id, envKey: environment.key, flagId: flag.id, enabled })} />
                <span aria-hidden="true" className="switch-label">{flag.enabled ? 'On' : 'Off'}</span>
              </div>
              <FormError message={setEnabled.error && `Not switched: ${setEnabled.error.message}`} />
              <div className="rollout-row">
                <span id="rollout-label">Rollout</span>
                <Slider.Root className="slider" disabled={rolloutLocked} value={[rollout]} min={0} max={100} step={1} onValueChange={([value]) => setRollout(value ?? 0)} onValueCommit={([value]) => void saveRollout(value ?? 0)} aria-labelledby="rollout-label">
                  <Slider.Track className="slider-track">
                    <Slider.Range className="slider-range" />
                  </Slider.Track>
                  <Slider.Thumb className="slider-thumb" aria-label={`Rollout percentage of ${flag.key} in ${environment.name}`} aria-describedby={releasing ? 'rollout-released' : undefined} />
                </Slider.Root>
                <span className="number-group">
                <label className="visually-hidden" htmlFor="rollout-number">
                  Rollout percentage
                </label>
                <input
                  id="rollout-number"
                  className="number"
                  type="number"
                  min={0}
                  max={100}
                  value={rollout}
                  disabled={rolloutLocked}
                  aria-invalid={rolloutError ? true : undefined}
                  aria-describedby={[releasing ? 'rollout-released' : '', rolloutError ? 'rollout-error' : ''].join(' ').trim() || undefined}
                  onChange={(event) => setRollout(event.target.value === '' ? 0 : Number(event.target.value))}
                  onBlur={() => rollout !== flag.rollout_percentage && void saveRollout(rollout)}
                  onKeyDown={(event) => event.key === 'Enter' && void saveRollout(rollout)}
                />
                <span aria-hidden="true">%</span>
                </span>
              </div>
              <FormError message={rolloutError} id="rollout-error" />
              {releasing && (
                <p className="muted small" id="rollout-released">
                  A guarded release sets the rollout step by step: see Guarded release below.
                </p>
              )}
              <EveryoneElse flag={flag} readOnly={!canEdit} save={save} />
              <p className="muted small">
                While it is on, users a rule serves get what the rule serves.{' '}
                {flag.everyone_else === 'off'
                  ? 'Everyone else gets it off: the rollout is not used.'
                  : rollout === 0
                    ? 'Rollout 0 means no rollout: everyone else gets it too.'
                    : `Of everyone else, ${rollout}% get it, chosen by a stable hash of their user_id.`}
              </p>
            </div>
          </section>

          <ReleasePanel projectId={projectId} environment={environment} flag={stored} readOnly={!canEdit} />

          <VariantsEditor projectId={projectId} envId={environment.id} flag={flag} readOnly={!canEdit} saveLabel={saveLabel} />

          <PrerequisitesEditor projectId={projectId} environment={environment} flag={flag} readOnly={!canEdit} saveLabel={reviewed ? 'Add to request' : undefined} />

          <RulesEditor projectId={projectId} envId={environment.id} flag={flag} readOnly={!canEdit} />

          <SchedulesPanel projectId={projectId} environment={environment} flag={stored} readOnly={!canEdit} />

          <section className="panel">
            <h3>Usage</h3>
            <Suspense fallback={<Loading what="the chart" />}>
              <FlagChart projectId={projectId} envId={environment.id} flagId={flag.id} flagKey={flag.key} variantKeys={flag.variants.map((variant) => variant.key)} />
            </Suspense>
          </section>

          <Details flag={flag} save={save} readOnly={!canEdit} saveLabel={saveLabel} />
          {canEdit && <CopyToEnvironment flag={flag} environment={environment} environments={environments} />}

          {canEdit && (
            <section className="panel danger-zone">
              <h3>Delete this flag</h3>
              <p>
                Deletes {flag.key} in {environment.name} with its rules. Its evaluation history stays.
                {reviewed && ' In this environment the deletion goes into the draft change request.'}
              </p>
              <button type="button" className="danger" onClick={() => setDeleting(true)}>
                {reviewed ? 'Request deletion' : 'Delete flag'}
              </button>
            </section>
          )}
        </>
      )}
      <ConfirmDialog
        open={deleting}
        onOpenChange={setDeleting}
        title={`Delete ${flag.key} in ${environment.name}?`}
        description="Apps asking for it get no entry for this flag (treat it as off). Other environments keep their copy."
        confirmLabel={reviewed ? 'Add deletion to request' : 'Delete flag'}
        onConfirm={async () => void (await remove.mutateAsync())}
      />
    </div>
  );
}

const EVERYONE_ELSE = { rollout: 'served by the rollout', off: 'off' } as const;

/** What a user no rule served gets (docs/targeting.md, everyone_else). */
function EveryoneElse({ flag, readOnly, save }: { flag: Flag; readOnly: boolean; save: (changes: Pick<Flag, 'everyone_else'>) => Promise<void> }) {
  const [error, setError] = useState<string | null>(null);
  const choose = async (everyone_else: Flag['everyone_else']) => {
    setError(null);
    try {
      await save({ everyone_else });
    } catch (caught) {
      setError(`Not changed: ${(caught as Error).message}`);
    }
  };
  return (
    <div className="everyone-else">
      <span className="everyone-label" aria-hidden="true">
        Everyone else
      </span>
      <fieldset className="segmented" disabled={readOnly}>
        <legend>Everyone else</legend>
        {(Object.keys(EVERYONE_ELSE) as Flag['everyone_else'][]).map((value) => (
          <label key={value} className={flag.everyone_else === value ? 'selected' : ''}>
            <input type="radio" name="everyone-else" value={value} checked={flag.everyone_else === value} onChange={() => void choose(value)} />
            {EVERYONE_ELSE[value]}
          </label>
        ))}
      </fieldset>
      <FormError message={error} />
    </div>
  );
}

/** What a bucketing key may be (docs/flags-as-code.md, "Bucketing key"). */
const BUCKETING_KEY = /^[A-Za-z0-9._~:-]{1,100}$/;

function Details({ flag, save, readOnly, saveLabel = 'Save details' }: { flag: Flag; save: (changes: { name?: string; description?: string | null; bucketing_key?: string | null }) => Promise<void>; readOnly: boolean; saveLabel?: string | undefined }) {
  const [name, setName] = useState(flag.name);
  const [description, setDescription] = useState(flag.description ?? '');
  const [bucketingKey, setBucketingKey] = useState(flag.bucketing_key ?? '');
  const [errors, setErrors] = useState<{ name?: string; bucketingKey?: string; form?: string }>({});
  const [saved, setSaved] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    if (!name.trim()) return setErrors({ name: 'A flag needs a name' });
    const bucketing = bucketingKey.trim();
    if (bucketing && !BUCKETING_KEY.test(bucketing)) return setErrors({ bucketingKey: 'Up to 100 of A–Z, a–z, 0–9 and . _ ~ : -' });
    setErrors({});
    try {
      await save({ name: name.trim(), description: description.trim() || null, ...(bucketing !== (flag.bucketing_key ?? '') ? { bucketing_key: bucketing || null } : {}) });
      setSaved(true);
    } catch (error) {
      setErrors({ form: (error as Error).message });
    }
  };
  return (
    <section className="panel">
      <h3>Details</h3>
      <form onSubmit={submit} noValidate>
        <fieldset className="plain" disabled={readOnly}>
          <Field label="Flag name" value={name} onChange={setName} error={errors.name} maxLength={200} />
          <Field label="Description" value={description} onChange={setDescription} multiline maxLength={2000} />
          <Field
            label="Bucketing key"
            value={bucketingKey}
            onChange={setBucketingKey}
            error={errors.bucketingKey}
            maxLength={100}
            placeholder={flag.key}
            hint="Hashed instead of the flag key for the rollout and the variants: set it to a flag's former key (or its name in another system) so users keep their buckets. Empty: the flag key. Changing it moves users."
          />
          <FormError message={errors.form} />
          <div className="actions start">
            <button type="submit" title={readOnly ? reasonFor('editor') : undefined}>{saveLabel}</button>
            <span role="status" className="muted">
              {saved ? (saveLabel === 'Save details' ? 'Saved' : 'Added to the draft') : ''}
            </span>
          </div>
        </fieldset>
      </form>
    </section>
  );
}

function CopyToEnvironment({ flag, environment, environments }: { flag: Flag; environment: Environment; environments: Environment[] }) {
  const copyFlag = useCopyFlag(flag.project_id, environment.id, flag.id);
  const targets = environments.filter((env) => env.id !== environment.id);
  const [target, setTarget] = useState(targets[0]?.id ?? '');
  const [overwrite, setOverwrite] = useState(false);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  if (targets.length === 0) return null;

  const copy = async (event: FormEvent) => {
    event.preventDefault();
    setMessage(null);
    const name = targets.find((env) => env.id === target)?.name ?? 'the environment';
    try {
      await copyFlag.mutateAsync({ target_environment_id: target, overwrite });
      setMessage({ ok: true, text: `Copied ${flag.key} to ${name}, with its rules.` });
    } catch (error) {
      // 409: the key is there already, or a prerequisite is not (its message names it).
      const text = error instanceof ApiError && error.status === 409 && /already exists/.test(error.message) ? `${name} already has ${flag.key}. Tick "Replace it" to overwrite it there.` : (error as Error).message;
      setMessage({ ok: false, text });
    }
  };

  return (
    <section className="panel">
      <h3>Copy to environment</h3>
      <p className="muted">Copies the name, description, on/off, rollout, everyone else, variants, prerequisites and rules.</p>
      <form onSubmit={copy} noValidate className="inline-form">
        <div className="field">
          <label htmlFor="copy-target">Target environment</label>
          <select id="copy-target" value={target} onChange={(event) => setTarget(event.target.value)}>
            {targets.map((env) => (
              <option key={env.id} value={env.id}>
                {env.name}
              </option>
            ))}
          </select>
        </div>
        <label className="checkbox">
          <input type="checkbox" checked={overwrite} onChange={(event) => setOverwrite(event.target.checked)} /> Replace it if the key exists there
        </label>
        <div className="actions start">
          <button type="submit">Copy flag</button>
        </div>
      </form>
      <Outcome message={message} />
    </section>
  );
}

/**
 * The writes to experiments (docs/experiments.md), each with its checks, run by the routes inside
 * ProjectWrites.apply: create a draft, start it, stop it, delete it; and what deleting a flag does
 * to them.
 */
import type { Db } from '../../db/database.js';
import { newId, nowIso } from '../../db/values.js';
import { Conflict, Invalid, NotFound } from '../../errors.js';
import type { Change } from '../changes/changes.schemas.js';
import type { RecordChange, WriteContext } from '../changes/project-writes.js';
import { requireEnvironment } from '../environments/environments.repository.js';
import { requireFlag } from '../flags/flags.repository.js';
import { armsOf, armsWithShare, expectedShares } from './arms.js';
import { requireExperiment, withMetrics, type Experiment, type ExperimentMetric } from './experiments.repository.js';
import { requireProjectMetrics } from './metrics.repository.js';

type ExperimentAction = 'experiment.created' | 'experiment.started' | 'experiment.stopped' | 'experiment.deleted';
type Scope = Parameters<typeof requireExperiment>[1];

const experimentChange = (action: ExperimentAction, before: Experiment | null, after: Experiment | null): Change => {
  const experiment = (after ?? before)!;
  return { action, resource_type: 'experiment', resource_id: experiment.id, resource_key: experiment.flag_key, environment_id: experiment.environment_id, before, after };
};

export interface ExperimentFields {
  flag_id: string;
  name: string;
  hypothesis?: string | null | undefined;
  control: string;
  metrics: ExperimentMetric[];
  alpha?: number | undefined;
  sequential?: boolean | undefined;
  sequential_tuning?: number | undefined;
  cuped?: boolean | undefined;
  cuped_lookback_days?: number | undefined;
  min_units?: number | undefined;
}

const notAnArm = (field: string, arm: string, arms: readonly string[]) => new Invalid(`${field} "${arm}" is not an arm of the flag (${arms.join(', ')})`);

/** A draft on a flag of the environment; its control an arm of the flag, its metrics the project's, each once. */
export async function createExperimentWrite(trx: Db, record: RecordChange, scope: { projectId: string; envId: string }, fields: ExperimentFields): Promise<Experiment> {
  await requireEnvironment(trx, scope);
  const flag = await requireFlag(trx, { ...scope, flagId: fields.flag_id }).catch((error: unknown) => {
    throw error instanceof NotFound ? new Invalid(`flag_id: no flag ${fields.flag_id} in this environment`) : error;
  });
  const arms = armsOf(flag);
  if (!arms.includes(fields.control)) throw notAnArm('control', fields.control, arms);
  await requireProjectMetrics(trx, scope.projectId, fields.metrics.map((metric) => metric.metric_id), 'metrics');
  const now = nowIso();
  const row = {
    id: newId(),
    project_id: scope.projectId,
    environment_id: scope.envId,
    flag_id: flag.id,
    flag_key: flag.key,
    name: fields.name,
    hypothesis: fields.hypothesis ?? null,
    control: fields.control,
    alpha: fields.alpha ?? 0.05,
    sequential: fields.sequential ?? false,
    sequential_tuning: fields.sequential_tuning ?? 5000,
    cuped: fields.cuped ?? false,
    cuped_lookback_days: fields.cuped_lookback_days ?? 14,
    min_units: fields.min_units ?? 100,
    status: 'draft',
    expected_shares: null,
    decision: null,
    note: null,
    created_at: now,
    updated_at: now,
    started_at: null,
    stopped_at: null,
  };
  await trx.insertInto('experiments').values(row).execute();
  await trx.insertInto('experiment_metrics').values(fields.metrics.map((metric, position) => ({ experiment_id: row.id, metric_id: metric.metric_id, role: metric.role, position }))).execute();
  const created = await requireExperiment(trx, { ...scope, experimentId: row.id });
  record(experimentChange('experiment.created', null, created));
  return created;
}

/**
 * Draft → running, with each arm's expected share as the flag is now, fixed from here on. 409: not
 * a draft, its flag gone, another experiment running on the flag in this environment (the
 * project's lock, taken first by every write, keeps two starts from both passing), its control no
 * longer an arm, fewer than two arms expected to get units, or no metric left.
 */
export async function startExperimentWrite(trx: Db, record: RecordChange, scope: Scope): Promise<Experiment> {
  const before = await requireExperiment(trx, scope);
  if (before.status !== 'draft') throw new Conflict(`Only a draft experiment can start; this one is ${before.status}`);
  const flag = await requireFlag(trx, { projectId: scope.projectId, envId: scope.envId, flagId: before.flag_id }).catch((error: unknown) => {
    throw error instanceof NotFound ? new Conflict(`Its flag "${before.flag_key}" was deleted`) : error;
  });
  const running = await trx.selectFrom('experiments').select('name').where('flag_id', '=', flag.id).where('environment_id', '=', scope.envId).where('status', '=', 'running').executeTakeFirst();
  if (running) throw new Conflict(`Experiment "${running.name}" is already running on flag "${flag.key}" in this environment: stop it first`);
  const shares = expectedShares(flag);
  if (!(before.control in shares)) throw new Conflict(`control "${before.control}" is no longer an arm of flag "${flag.key}" (${armsOf(flag).join(', ')})`);
  const served = armsWithShare(shares);
  if (served.length < 2) throw new Conflict(`Flag "${flag.key}" as it is now serves ${served.length === 1 ? `only "${served[0]}"` : 'no arm'} to the units no rule serves: an experiment needs at least two arms with a positive share (enable it, and set a rollout between 1 and 99 or variants with weights)`);
  if (before.metrics.length === 0) throw new Conflict('The experiment has no metric left (its metrics were deleted)');
  const now = nowIso();
  const row = await trx
    .updateTable('experiments')
    .set({ status: 'running', started_at: now, updated_at: now, expected_shares: JSON.stringify(shares) })
    .where('id', '=', before.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  const after = (await withMetrics(trx, [row]))[0]!;
  record(experimentChange('experiment.started', before, after));
  return after;
}

/** Running → stopped; `decision`, when given, one of the arms it started with. The flag is not changed. */
export async function stopExperimentWrite(trx: Db, record: RecordChange, scope: Scope, sent: { decision?: string | null | undefined; note?: string | null | undefined }): Promise<Experiment> {
  const before = await requireExperiment(trx, scope);
  if (before.status !== 'running') throw new Conflict(`Only a running experiment can stop; this one is ${before.status}`);
  const arms = Object.keys(before.expected_shares ?? {});
  if (sent.decision != null && !arms.includes(sent.decision)) throw notAnArm('decision', sent.decision, arms);
  return stop(trx, record, before, sent.decision ?? null, sent.note ?? null);
}

async function stop(trx: Db, record: RecordChange, before: Experiment, decision: string | null, note: string | null): Promise<Experiment> {
  const now = nowIso();
  const row = await trx.updateTable('experiments').set({ status: 'stopped', stopped_at: now, updated_at: now, decision, note }).where('id', '=', before.id).returningAll().executeTakeFirstOrThrow();
  const after = (await withMetrics(trx, [row]))[0]!;
  record(experimentChange('experiment.stopped', before, after));
  return after;
}

/** A draft or a stopped experiment; a running one is 409 (stop it first). */
export async function deleteExperimentWrite(trx: Db, record: RecordChange, scope: Scope): Promise<void> {
  const experiment = await requireExperiment(trx, scope);
  if (experiment.status === 'running') throw new Conflict('A running experiment cannot be deleted: stop it first');
  await trx.deleteFrom('experiments').where('id', '=', experiment.id).execute();
  record(experimentChange('experiment.deleted', experiment, null));
}

/**
 * A consequence of every write (app.ts): deleting a flag stops its running experiments (no
 * decision, a note that says why). Every experiment of the flag stays, with what it learned; a
 * draft of it can no longer start.
 */
export async function stopExperimentsOfDeletedFlags(trx: Db, changes: readonly Change[], _context: WriteContext): Promise<Change[]> {
  const deleted = changes.filter((change) => change.action === 'flag.deleted').map((change) => change.resource_id);
  if (deleted.length === 0) return [];
  const rows = await trx.selectFrom('experiments').selectAll().where('flag_id', 'in', deleted).where('status', '=', 'running').execute();
  const stopped: Change[] = [];
  for (const before of await withMetrics(trx, rows)) await stop(trx, (change) => stopped.push(change), before, null, 'its flag was deleted');
  return stopped;
}

import type { Selectable } from 'kysely';
import type { Db } from '../../db/database.js';
import type { ExperimentsTable } from '../../db/schema.js';
import { fromJson, toBool, toIso, toIsoOrNull } from '../../db/values.js';
import { NotFound } from '../../errors.js';
import type { ExperimentStatus, METRIC_ROLES } from './experiments.schemas.js';

export type ExperimentRow = Selectable<ExperimentsTable>;
export interface ExperimentMetric {
  metric_id: string;
  role: (typeof METRIC_ROLES)[number];
}

/** The experiment as the API shows it (docs/experiments.md). */
export function toExperiment(row: ExperimentRow, metrics: ExperimentMetric[]) {
  return {
    id: row.id,
    project_id: row.project_id,
    environment_id: row.environment_id,
    flag_id: row.flag_id,
    flag_key: row.flag_key,
    name: row.name,
    hypothesis: row.hypothesis,
    control: row.control,
    metrics,
    alpha: row.alpha,
    sequential: toBool(row.sequential),
    sequential_tuning: row.sequential_tuning,
    cuped: toBool(row.cuped),
    cuped_lookback_days: row.cuped_lookback_days,
    min_units: row.min_units,
    status: row.status as ExperimentStatus,
    expected_shares: row.expected_shares === null ? null : fromJson<Record<string, number>>(row.expected_shares),
    decision: row.decision,
    note: row.note,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
    started_at: toIsoOrNull(row.started_at),
    stopped_at: toIsoOrNull(row.stopped_at),
  };
}
export type Experiment = ReturnType<typeof toExperiment>;

/** The experiments of these rows, each with its metrics in the order they were sent. */
export async function withMetrics(db: Db, rows: ExperimentRow[]): Promise<Experiment[]> {
  if (rows.length === 0) return [];
  const links = await db.selectFrom('experiment_metrics').selectAll().where('experiment_id', 'in', rows.map((row) => row.id)).orderBy('position').execute();
  return rows.map((row) => toExperiment(row, links.filter((link) => link.experiment_id === row.id).map((link) => ({ metric_id: link.metric_id, role: link.role as ExperimentMetric['role'] }))));
}

export async function requireExperiment(db: Db, scope: { projectId: string; envId: string; experimentId: string }): Promise<Experiment> {
  const row = await db.selectFrom('experiments').selectAll().where('id', '=', scope.experimentId).where('environment_id', '=', scope.envId).where('project_id', '=', scope.projectId).executeTakeFirst();
  if (!row) throw new NotFound('Experiment not found');
  return (await withMetrics(db, [row]))[0]!;
}

/** Oldest first. */
export async function listExperiments(db: Db, scope: { projectId: string; envId: string }): Promise<Experiment[]> {
  const rows = await db.selectFrom('experiments').selectAll().where('environment_id', '=', scope.envId).where('project_id', '=', scope.projectId).orderBy('created_at').orderBy('id').execute();
  return withMetrics(db, rows);
}

import type { Selectable } from 'kysely';
import type { Db } from '../../db/database.js';
import { conflictOnDuplicate } from '../../db/errors.js';
import type { MetricsTable } from '../../db/schema.js';
import { newId, nowIso, toIso } from '../../db/values.js';
import { Invalid, NotFound } from '../../errors.js';
import type { BETTER, METRIC_KINDS } from './metrics.schemas.js';

export interface MetricFields {
  key: string;
  name: string;
  event: string;
  kind: (typeof METRIC_KINDS)[number];
  better: (typeof BETTER)[number];
  window_hours: number | null;
}

/** The metric as the API shows it (docs/experiments.md). */
export function toMetric(row: Selectable<MetricsTable>) {
  return {
    id: row.id,
    project_id: row.project_id,
    key: row.key,
    name: row.name,
    event: row.event,
    kind: row.kind as MetricFields['kind'],
    better: row.better as MetricFields['better'],
    window_hours: row.window_hours,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}
export type Metric = ReturnType<typeof toMetric>;

const duplicateKey = (key: string) => `A metric with key "${key}" already exists in this project`;

export async function requireMetric(db: Db, projectId: string, metricId: string): Promise<Metric> {
  const row = await db.selectFrom('metrics').selectAll().where('id', '=', metricId).where('project_id', '=', projectId).executeTakeFirst();
  if (!row) throw new NotFound('Metric not found');
  return toMetric(row);
}

/** 400 unless these are metrics of the project, each named once (`field`: where the body names them). */
export async function requireProjectMetrics(db: Db, projectId: string, metricIds: readonly string[], field: string): Promise<void> {
  if (new Set(metricIds).size !== metricIds.length) throw new Invalid(`${field}: each metric may be named once`);
  const known = new Set((await db.selectFrom('metrics').select('id').where('project_id', '=', projectId).where('id', 'in', metricIds).execute()).map((row) => row.id));
  const unknown = metricIds.find((id) => !known.has(id));
  if (unknown !== undefined) throw new Invalid(`${field}: no metric ${unknown} in this project`);
}

/** By key. */
export async function listMetrics(db: Db, projectId: string): Promise<Metric[]> {
  const rows = await db.selectFrom('metrics').selectAll().where('project_id', '=', projectId).orderBy('key').execute();
  return rows.map(toMetric);
}

export async function createMetric(db: Db, projectId: string, fields: MetricFields): Promise<Metric> {
  const now = nowIso();
  const row = { id: newId(), project_id: projectId, ...fields, created_at: now, updated_at: now };
  await conflictOnDuplicate(db.insertInto('metrics').values(row).execute(), duplicateKey(fields.key));
  return toMetric(row);
}

export async function updateMetric(db: Db, metricId: string, changes: Partial<MetricFields>): Promise<Metric> {
  const update = db.updateTable('metrics').set({ ...changes, updated_at: nowIso() }).where('id', '=', metricId).returningAll().executeTakeFirstOrThrow();
  return toMetric(await conflictOnDuplicate(update, duplicateKey(changes.key ?? '')));
}

/** Its place in experiments that are not running goes with it (experiment_metrics' foreign key). */
export async function deleteMetric(db: Db, metricId: string): Promise<void> {
  await db.deleteFrom('metrics').where('id', '=', metricId).execute();
}

/** The running experiments that measure it: their names, for a 409. */
export async function runningExperimentsUsing(db: Db, metricId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('experiment_metrics')
    .innerJoin('experiments', 'experiments.id', 'experiment_metrics.experiment_id')
    .select('experiments.name')
    .where('experiment_metrics.metric_id', '=', metricId)
    .where('experiments.status', '=', 'running')
    .orderBy('experiments.name')
    .execute();
  return rows.map((row) => row.name);
}

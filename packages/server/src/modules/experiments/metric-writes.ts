/** The writes to a project's metrics (docs/experiments.md), run by the routes inside ProjectWrites.apply. */
import type { Db } from '../../db/database.js';
import { fromJson, onlyProvided } from '../../db/values.js';
import { Conflict } from '../../errors.js';
import type { AuditAction, Change } from '../changes/changes.schemas.js';
import type { RecordChange } from '../changes/project-writes.js';
import { createMetric, deleteMetric, requireMetric, runningExperimentsUsing, updateMetric, type Metric, type MetricFields } from './metrics.repository.js';

const metricChange = (action: AuditAction, before: Metric | null, after: Metric | null): Change => {
  const metric = (after ?? before)!;
  return { action, resource_type: 'metric', resource_id: metric.id, resource_key: metric.key, before, after };
};

export async function createMetricWrite(trx: Db, record: RecordChange, projectId: string, fields: MetricFields): Promise<Metric> {
  const created = await createMetric(trx, projectId, fields);
  record(metricChange('metric.created', null, created));
  return created;
}

/** Only the fields sent change; null clears window_hours. */
export async function updateMetricWrite(trx: Db, record: RecordChange, scope: { projectId: string; metricId: string }, sent: Partial<MetricFields>): Promise<Metric> {
  const { key, name, event, kind, better, window_hours } = sent; // only these: a body's other fields are not columns
  const before = await requireMetric(trx, scope.projectId, scope.metricId);
  const after = await updateMetric(trx, before.id, onlyProvided({ key, name, event, kind, better, window_hours }));
  record(metricChange('metric.updated', before, after));
  return after;
}

/** 409 while a running experiment measures it or a live release guards with it: either would lose a metric mid-flight. */
export async function deleteMetricWrite(trx: Db, record: RecordChange, scope: { projectId: string; metricId: string }): Promise<void> {
  const metric = await requireMetric(trx, scope.projectId, scope.metricId);
  const running = await runningExperimentsUsing(trx, metric.id);
  if (running.length > 0) throw new Conflict(`Metric "${metric.key}" is used by running experiment ${running.map((name) => `"${name}"`).join(', ')}: stop it first`);
  // The releases table read here, not through releases/ (which builds on this module).
  const releases = await trx.selectFrom('releases').select(['flag_key', 'guardrails']).where('project_id', '=', scope.projectId).where('status', 'in', ['running', 'paused']).execute();
  const guarded = releases.filter((release) => fromJson<{ metric_id: string }[]>(release.guardrails as string).some((guardrail) => guardrail.metric_id === metric.id));
  if (guarded.length > 0) throw new Conflict(`Metric "${metric.key}" is a guardrail of the release of ${guarded.map((release) => `"${release.flag_key}"`).join(', ')}: abort it or let it end first`);
  await deleteMetric(trx, metric.id);
  record(metricChange('metric.deleted', metric, null));
}

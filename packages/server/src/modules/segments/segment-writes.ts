/**
 * The writes to a project's segments, each with its checks (docs/targeting.md), as the routes and
 * the import (flags-as-code/import.ts) run them inside ProjectWrites.apply: one set of rules for
 * every way in.
 */
import type { Db } from '../../db/database.js';
import { onlyProvided } from '../../db/values.js';
import { Conflict } from '../../errors.js';
import type { AuditAction } from '../changes/changes.schemas.js';
import type { RecordChange } from '../changes/project-writes.js';
import { listEnvironments } from '../environments/environments.repository.js';
import { checkFlagRules, checkSegmentConditions, createSegment, deleteSegment, requireSegment, updateSegment, type Segment, type SegmentFields } from './segments.repository.js';

type SentFields = Omit<SegmentFields, 'conditions'> & { conditions: Parameters<typeof checkSegmentConditions>[0] };

/** The audit record of a change to it. */
export const segmentChange = (action: AuditAction, before: Segment | null, after: Segment | null) => {
  const segment = (after ?? before)!;
  return { action, resource_type: 'segment' as const, resource_id: segment.id, resource_key: segment.key, before, after };
};

/** "flag "checkout" in production, …": where a segment is used, for a 409. */
async function whereUsed(db: Db, segment: Segment): Promise<string> {
  const environments = new Map((await listEnvironments(db, segment.project_id)).map((env) => [env.id, env.key]));
  return segment.used_by.map((use) => `flag "${use.flag_key}" in ${environments.get(use.environment_id) ?? use.environment_id}`).join(', ');
}

export async function createSegmentWrite(trx: Db, record: RecordChange, projectId: string, fields: SentFields): Promise<Segment> {
  const created = await createSegment(trx, projectId, { ...fields, conditions: checkSegmentConditions(fields.conditions) });
  record(segmentChange('segment.created', null, created));
  return created;
}

/** Only the fields sent change; the flags that name it, in every environment, must stay within their limits. */
export async function updateSegmentWrite(trx: Db, record: RecordChange, scope: { projectId: string; segmentId: string }, sent: Partial<SentFields>): Promise<Segment> {
  const { key, name, description, conditions } = sent;
  const before = await requireSegment(trx, scope.projectId, scope.segmentId);
  if (key !== undefined && key !== before.key && before.used_by.length > 0) {
    throw new Conflict(`Segment "${before.key}" is used by ${await whereUsed(trx, before)}: its key cannot change while it is in use`);
  }
  const checked = conditions === undefined ? undefined : checkSegmentConditions(conditions);
  const after = await updateSegment(trx, before.id, onlyProvided({ key, name, description, conditions: checked }), before.used_by);
  if (checked !== undefined) {
    const users = before.used_by.map((use) => ({ id: use.flag_id, key: use.flag_key }));
    await checkFlagRules(trx, scope.projectId, users, (flagKey) => `Segment "${before.key}" would take flag "${flagKey}" over its limits`);
  }
  record(segmentChange('segment.updated', before, after));
  return after;
}

/** 409 while a rule of any environment names it. */
export async function deleteSegmentWrite(trx: Db, record: RecordChange, scope: { projectId: string; segmentId: string }): Promise<void> {
  const segment = await requireSegment(trx, scope.projectId, scope.segmentId);
  if (segment.used_by.length > 0) throw new Conflict(`Segment "${segment.key}" is used by ${await whereUsed(trx, segment)}: remove it from those rules first`);
  await deleteSegment(trx, segment.id);
  record(segmentChange('segment.deleted', segment, null));
}

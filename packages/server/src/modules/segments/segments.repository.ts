import { conditionProblem, flagProblem, Patterns, segmentProblem, type Condition } from '@guidon/engine';
import type { Static } from 'typebox';
import type { Db } from '../../db/database.js';
import { conflictOnDuplicate, notFoundIfParentGone } from '../../db/errors.js';
import { newId, nowIso, toIso } from '../../db/values.js';
import { Invalid, NotFound } from '../../errors.js';
import type { ConditionBody } from './segments.schemas.js';

/** A JSON column of conditions: text on SQLite, parsed by pg for jsonb. */
export function toConditions(value: string | object[] | null): Condition[] | null {
  if (value === null) return null;
  return (typeof value === 'string' ? JSON.parse(value) : value) as Condition[];
}

type SentCondition = Static<typeof ConditionBody> | Condition;

/**
 * Every problem of a condition list (docs/targeting.md), each a message that names the condition
 * (`where(i)`, by default `conditions[i]`) and its operator. IN_SEGMENT's keys are checked against
 * segmentKeys; null: the list is a segment's, where IN_SEGMENT is refused. `patterns`: those
 * compiled so far in this save, so that each distinct pattern is compiled once.
 */
export function conditionProblems(conditions: readonly SentCondition[], segmentKeys: ReadonlySet<string> | null, where = (i: number) => `conditions[${i}]`, patterns = new Patterns()): string[] {
  const problems: string[] = [];
  conditions.forEach((sent, i) => {
    const condition = sent as Condition; // its operator is checked first
    const problem = conditionProblem(condition, where(i), { inSegment: segmentKeys === null, patterns });
    if (problem !== null) problems.push(problem);
    else if (condition.operator === 'IN_SEGMENT') {
      const unknown = (condition.values ?? []).find((key) => !segmentKeys!.has(key));
      if (unknown !== undefined) problems.push(`${where(i)} (IN_SEGMENT): no segment "${unknown}" in this project`);
    }
  });
  return problems;
}

/** Conditions as stored and as the API shows them: every field present. */
export function storedConditions(conditions: readonly SentCondition[]): Condition[] {
  return conditions.map((sent) => {
    const condition = sent as Condition;
    return {
      attribute: condition.operator === 'IN_SEGMENT' ? null : condition.attribute!,
      operator: condition.operator,
      values: [...(condition.values ?? [])],
      negate: condition.negate === true,
      case_insensitive: condition.case_insensitive === true,
    };
  });
}

/** The conditions as stored, or a 400 naming the first problem. */
export function checkConditions(conditions: readonly SentCondition[], segmentKeys: ReadonlySet<string> | null, patterns = new Patterns()): Condition[] {
  const [problem] = conditionProblems(conditions, segmentKeys, undefined, patterns);
  if (problem !== undefined) throw new Invalid(problem);
  return storedConditions(conditions);
}

/** A segment's own conditions, each checked and then taken together (their size and what they may cost), as stored; or Invalid. */
export function checkSegmentConditions(conditions: readonly SentCondition[]): Condition[] {
  const patterns = new Patterns();
  const checked = checkConditions(conditions, null, patterns);
  const problem = segmentProblem(checked, patterns);
  if (problem !== null) throw new Invalid(problem);
  return checked;
}

/** The project's segments' conditions by key (those of `keys` only, when given), as the engine compiles them. */
export async function segmentConditions(db: Db, projectId: string, keys?: readonly string[]): Promise<Map<string, Condition[]>> {
  let query = db.selectFrom('segments').select(['key', 'conditions']).where('project_id', '=', projectId);
  if (keys) query = query.where('key', 'in', keys);
  const rows = await query.execute();
  return new Map(rows.map((row) => [row.key, toConditions(row.conditions) ?? []]));
}

/**
 * Each flag's rules taken together, as they are in the transaction after a write, within the
 * engine's limits (docs/targeting.md, "What a flag may cost"): at most 100 rules, their conditions
 * at most 256 KiB, and an evaluation that may cost at most 1 ms with the segments they name; or
 * Invalid, its message after `cause(flag key)` when given (a segment's change is checked against
 * each flag that uses it).
 */
export async function checkFlagRules(db: Db, projectId: string, flags: readonly { id: string; key: string }[], cause?: (flagKey: string) => string): Promise<void> {
  if (flags.length === 0) return;
  const rules = (await db.selectFrom('rules').select(['flag_id', 'conditions']).where('flag_id', 'in', flags.map((flag) => flag.id)).execute()).map((rule) => ({ flag_id: rule.flag_id, conditions: toConditions(rule.conditions) }));
  // Only the segments the rules name: a save costs what the flag holds, not what the project does.
  const named = [...new Set(rules.flatMap((rule) => (rule.conditions ?? []).flatMap((condition) => (condition.operator === 'IN_SEGMENT' ? [...(condition.values ?? [])] : []))))];
  const segments = named.length === 0 ? new Map<string, Condition[]>() : await segmentConditions(db, projectId, named);
  const patterns = new Patterns();
  for (const flag of flags) {
    const own = rules.filter((rule) => rule.flag_id === flag.id);
    const problem = flagProblem(own, segments, patterns);
    if (problem !== null) throw new Invalid(cause ? `${cause(flag.key)}: ${problem}` : problem);
  }
}

export interface Usage {
  environment_id: string;
  flag_id: string;
  flag_key: string;
}

/** Every segment key named by a conditions rule of the project, with the flags whose rules name it. */
export async function segmentUsage(db: Db, projectId: string): Promise<Map<string, Usage[]>> {
  const rows = await db
    .selectFrom('rules')
    .innerJoin('flags', 'flags.id', 'rules.flag_id')
    .select(['rules.conditions', 'flags.id as flag_id', 'flags.key as flag_key', 'flags.environment_id'])
    .where('flags.project_id', '=', projectId)
    .where('rules.rule_type', '=', 'conditions')
    .orderBy('flags.key')
    .orderBy('flags.environment_id')
    .execute();
  const usage = new Map<string, Usage[]>();
  for (const row of rows) {
    for (const condition of toConditions(row.conditions) ?? []) {
      if (condition.operator !== 'IN_SEGMENT') continue;
      for (const key of condition.values ?? []) {
        let users = usage.get(key);
        if (!users) usage.set(key, (users = []));
        if (!users.some((user) => user.flag_id === row.flag_id)) users.push({ environment_id: row.environment_id, flag_id: row.flag_id, flag_key: row.flag_key });
      }
    }
  }
  return usage;
}

const COLUMNS = ['id', 'project_id', 'key', 'name', 'description', 'conditions', 'created_at', 'updated_at'] as const;

type Row = { id: string; project_id: string; key: string; name: string; description: string | null; conditions: string | object[]; created_at: string | Date; updated_at: string | Date };
const toSegment = (row: Row, usage: Map<string, Usage[]>) => ({
  ...row,
  conditions: toConditions(row.conditions) ?? [],
  created_at: toIso(row.created_at),
  updated_at: toIso(row.updated_at),
  used_by: usage.get(row.key) ?? [],
});
export type Segment = ReturnType<typeof toSegment>;

export async function listSegments(db: Db, projectId: string): Promise<Segment[]> {
  const [rows, usage] = await Promise.all([db.selectFrom('segments').select(COLUMNS).where('project_id', '=', projectId).orderBy('key').execute(), segmentUsage(db, projectId)]);
  return rows.map((row) => toSegment(row, usage));
}

export async function requireSegment(db: Db, projectId: string, segmentId: string): Promise<Segment> {
  const row = await db.selectFrom('segments').select(COLUMNS).where('id', '=', segmentId).where('project_id', '=', projectId).executeTakeFirst();
  if (!row) throw new NotFound('Segment not found');
  return toSegment(row, await segmentUsage(db, projectId));
}

/** The project's segment keys (for IN_SEGMENT). */
export async function segmentKeys(db: Db, projectId: string): Promise<Set<string>> {
  const rows = await db.selectFrom('segments').select('key').where('project_id', '=', projectId).execute();
  return new Set(rows.map((row) => row.key));
}

const duplicateKey = (key: string) => `A segment with key "${key}" already exists in this project`;

export interface SegmentFields {
  key: string;
  name: string;
  description: string | null;
  conditions: Condition[];
}

export async function createSegment(db: Db, projectId: string, fields: SegmentFields): Promise<Segment> {
  const now = nowIso();
  const row = { id: newId(), project_id: projectId, ...fields, conditions: JSON.stringify(fields.conditions), created_at: now, updated_at: now };
  await notFoundIfParentGone(conflictOnDuplicate(db.insertInto('segments').values(row).execute(), duplicateKey(fields.key)), 'Project not found');
  return toSegment({ ...row, conditions: fields.conditions }, new Map());
}

/** `usedBy`: the segment's users before the change, still its users after (a key changes only while unused). */
export async function updateSegment(db: Db, segmentId: string, changes: Partial<SegmentFields>, usedBy: Usage[]): Promise<Segment> {
  const { conditions, ...rest } = changes;
  const update = db
    .updateTable('segments')
    .set({ ...rest, ...(conditions ? { conditions: JSON.stringify(conditions) } : {}), updated_at: nowIso() })
    .where('id', '=', segmentId)
    .returning(COLUMNS)
    .executeTakeFirst();
  const row = await conflictOnDuplicate(update, duplicateKey(changes.key ?? ''));
  if (!row) throw new NotFound('Segment not found');
  return { ...toSegment(row, new Map()), used_by: usedBy };
}

export async function deleteSegment(db: Db, segmentId: string): Promise<void> {
  await db.deleteFrom('segments').where('id', '=', segmentId).execute();
}

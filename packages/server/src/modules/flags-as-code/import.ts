/**
 * An import's plan and its application (docs/flags-as-code.md). The plan compares the state a
 * checked document asks for with the project's, by key: environments, segments, and each flag in
 * each environment the document names. Applying it writes through the routes' own repository
 * functions inside the caller's transaction (ProjectWrites.apply), recording one change per
 * resource changed, as the API's routes record them.
 */
import { normalizedPrerequisites } from '../flags/prerequisites.js';
import type { Db } from '../../db/database.js';
import type { RecordChange } from '../changes/project-writes.js';
import { createEnvironment, listEnvironments, updateEnvironment } from '../environments/environments.repository.js';
import { environmentChange } from '../environments/environments.routes.js';
import { createFlag, deleteFlag, requireFlag, updateFlag, type FlagFields } from '../flags/flags.repository.js';
import { flagChange } from '../flags/flag-writes.js';
import { createRule, deleteRule, listRules, updateRule, type RuleFields } from '../flags/rules.repository.js';
import { ruleChange } from '../flags/rule-writes.js';
import { createSegment, deleteSegment, listSegments, updateSegment } from '../segments/segments.repository.js';
import { segmentChange } from '../segments/segments.routes.js';
import type { RequestedChange } from '../change-requests/change-ops.js';
import type { FlagCreate, FlagPut } from '../flags/flag-writes.js';
import type { RuleCreate } from '../flags/rule-writes.js';
import type { DesiredState } from './document.check.js';
import { FLAG_FIELDS, pick, sameJson, STORED_FLAG_FIELDS, type FlagField, type FlagState, type ProjectState, type RuleState } from './state.js';

export type ImportMode = 'merge' | 'replace';

export interface PlanItem {
  resource: 'environment' | 'segment' | 'flag';
  key: string;
  environment: string | null;
  fields: string[];
}

export interface Plan {
  create: PlanItem[];
  update: PlanItem[];
  delete: PlanItem[];
  unchanged: number;
}

const SEGMENT_FIELDS = ['name', 'description', 'conditions'] as const;

const changedFields = <T extends object>(fields: readonly (keyof T & string)[], before: T, after: T) => fields.filter((field) => !sameJson(before[field], after[field]));

/** What the import would do: `merge` creates and updates; `replace` also deletes what the document does not name (flags only in the environments it names; environments never). */
export function planImport(current: ProjectState, desired: DesiredState, mode: ImportMode): Plan {
  const plan: Plan = { create: [], update: [], delete: [], unchanged: 0 };
  const item = (resource: PlanItem['resource'], key: string, environment: string | null = null, fields: string[] = []) => ({ resource, key, environment, fields });

  const environments = new Map(current.environments.map((env) => [env.key, env]));
  for (const env of desired.environments) {
    const before = environments.get(env.key);
    if (!before) plan.create.push(item('environment', env.key));
    else if (before.name !== env.name) plan.update.push(item('environment', env.key, null, ['name']));
    else plan.unchanged++;
  }

  const segments = new Map(current.segments.map((segment) => [segment.key, segment]));
  for (const segment of desired.segments) {
    const before = segments.get(segment.key);
    const fields = before && changedFields(SEGMENT_FIELDS, before, segment);
    if (!before) plan.create.push(item('segment', segment.key));
    else if (fields!.length > 0) plan.update.push(item('segment', segment.key, null, fields));
    else plan.unchanged++;
  }
  if (mode === 'replace') {
    const named = new Set(desired.segments.map((segment) => segment.key));
    for (const segment of current.segments) if (!named.has(segment.key)) plan.delete.push(item('segment', segment.key));
  }

  for (const env of desired.environments) {
    const wanted = desired.flags.get(env.key) ?? new Map<string, FlagState>();
    const existing = current.flags.get(env.key) ?? new Map<string, FlagState>();
    for (const key of [...wanted.keys()].sort()) {
      const before = existing.get(key);
      const fields = before && changedFields<FlagState>(FLAG_FIELDS, before, wanted.get(key)!);
      if (!before) plan.create.push(item('flag', key, env.key));
      else if (fields!.length > 0) plan.update.push(item('flag', key, env.key, fields));
      else plan.unchanged++;
    }
    if (mode === 'replace') for (const key of [...existing.keys()].sort()) if (!wanted.has(key)) plan.delete.push(item('flag', key, env.key));
  }
  return plan;
}

export const isEmpty = (plan: Plan) => plan.create.length + plan.update.length + plan.delete.length === 0;

const ruleFields = (rule: RuleState): RuleFields => ({ ...rule, rule_value: rule.rule_value ?? '' });
const flagFields = (key: string, flag: FlagState): FlagFields => ({ key, ...pick(flag, STORED_FLAG_FIELDS), prerequisites: normalizedPrerequisites(flag.prerequisites) });

type StoredRule = Awaited<ReturnType<typeof listRules>>[number];

/**
 * How a flag's rules become the wanted ones: the rule at each position is updated in place (its
 * id and history stay), extra ones deleted, missing ones created. Rules of equal priority are
 * ordered by age, so when keeping a rule in place would put two of them in another order, they
 * are all created anew instead.
 */
function rulesChange(stored: StoredRule[], wanted: RuleState[]) {
  const kept = Math.min(stored.length, wanted.length);
  const age = (rule: StoredRule) => `${rule.created_at} ${rule.id}`;
  for (let i = 1; i < kept; i++) {
    if (wanted[i]!.priority === wanted[i - 1]!.priority && age(stored[i]!) < age(stored[i - 1]!)) return { update: [], remove: stored, create: wanted };
  }
  return { update: stored.slice(0, kept).map((rule, i) => [rule, wanted[i]!] as const), remove: stored.slice(kept), create: wanted.slice(kept) };
}

/** Applies the plan of `desired` over `current` inside the caller's transaction, recording each change. */
export async function applyImport(trx: Db, record: RecordChange, projectId: string, current: ProjectState, desired: DesiredState, mode: ImportMode): Promise<void> {
  const plan = planImport(current, desired, mode);
  const wantedEnvironment = new Map(desired.environments.map((env) => [env.key, env]));
  const environments = new Map((await listEnvironments(trx, projectId)).map((env) => [env.key, env]));
  for (const { key } of plan.create.filter((item) => item.resource === 'environment')) {
    const created = await createEnvironment(trx, projectId, { key, name: wantedEnvironment.get(key)!.name });
    environments.set(key, created);
    record(environmentChange('environment.created', null, created));
  }
  for (const { key } of plan.update.filter((item) => item.resource === 'environment')) {
    const before = environments.get(key)!;
    record(environmentChange('environment.updated', before, await updateEnvironment(trx, before.id, { name: wantedEnvironment.get(key)!.name })));
  }

  // Segments before the rules that name them; deleted after the rules that named them are gone.
  const wantedSegment = new Map(desired.segments.map((segment) => [segment.key, segment]));
  const segments = new Map((await listSegments(trx, projectId)).map((segment) => [segment.key, segment]));
  for (const { key } of plan.create.filter((item) => item.resource === 'segment')) {
    const { name, description, conditions } = wantedSegment.get(key)!;
    record(segmentChange('segment.created', null, await createSegment(trx, projectId, { key, name, description, conditions })));
  }
  for (const { key, fields } of plan.update.filter((item) => item.resource === 'segment')) {
    const before = segments.get(key)!;
    const wanted = wantedSegment.get(key)!;
    const changes = Object.fromEntries(fields.map((field) => [field, wanted[field as (typeof SEGMENT_FIELDS)[number]]]));
    record(segmentChange('segment.updated', before, await updateSegment(trx, before.id, changes, before.used_by)));
  }

  for (const item of [...plan.create, ...plan.update, ...plan.delete].filter((entry) => entry.resource === 'flag')) {
    const env = environments.get(item.environment!)!;
    const wanted = desired.flags.get(env.key)?.get(item.key);
    const stored = current.flags.get(env.key)?.get(item.key);
    if (!stored) {
      const created = await createFlag(trx, env, flagFields(item.key, wanted!));
      record(flagChange('flag.created', null, created));
      for (const rule of wanted!.rules) record(ruleChange('rule.created', created, null, await createRule(trx, created.id, ruleFields(rule))));
      continue;
    }
    const before = await requireFlag(trx, { projectId, envId: env.id, flagId: stored.id! });
    if (!wanted) {
      await deleteFlag(trx, before.id);
      record(flagChange('flag.deleted', before, null));
      continue;
    }
    const fields = item.fields.filter((field): field is Exclude<FlagField, 'rules'> => field !== 'rules');
    let flag = before;
    if (fields.length > 0) {
      const all = flagFields(item.key, wanted);
      flag = await updateFlag(trx, before.id, Object.fromEntries(fields.map((field) => [field, all[field]])));
      record(flagChange(fields.length === 1 && fields[0] === 'enabled' ? 'flag.toggled' : 'flag.updated', before, flag));
    }
    if (!item.fields.includes('rules')) continue;
    const change = rulesChange(await listRules(trx, [before.id]), wanted.rules);
    for (const rule of change.remove) {
      await deleteRule(trx, rule.id);
      record(ruleChange('rule.deleted', flag, rule, null));
    }
    for (const [rule, wantedRule] of change.update) {
      const { id: _id, flag_id: _f, created_at: _c, updated_at: _u, ...fieldsNow } = rule;
      if (sameJson(fieldsNow, wantedRule)) continue;
      record(ruleChange('rule.updated', flag, rule, await updateRule(trx, rule.id, ruleFields(wantedRule))));
    }
    for (const rule of change.create) record(ruleChange('rule.created', flag, null, await createRule(trx, flag.id, ruleFields(rule))));
  }

  for (const { key } of plan.delete.filter((item) => item.resource === 'segment')) {
    const segment = segments.get(key)!;
    await deleteSegment(trx, segment.id);
    record(segmentChange('segment.deleted', segment, null));
  }
}

/** A rule of the document as a rule's create or PUT body (the API's fields; no null where the body takes none). */
function ruleBody(rule: RuleState): RuleCreate {
  const { rule_type, rule_value, conditions, enabled, priority, rollout_percentage, serve, variant } = rule;
  return { rule_type, rule_value, ...(conditions ? { conditions } : {}), enabled, priority, rollout_percentage, serve, variant } as RuleCreate;
}

/** A flag's own fields of the document as a create or PUT body. */
const flagBody = (flag: FlagState, fields: readonly (typeof STORED_FLAG_FIELDS)[number][]) =>
  Object.fromEntries(fields.map((field) => [field, field === 'variants' ? flag.variants.map(({ description, ...variant }) => (description == null ? variant : { ...variant, description })) : flag[field]]));

/**
 * The part of the plan of `desired` over `current` that falls in one environment's flags, as the
 * changes of a change request (docs/change-management.md): what applyImport would do there, each
 * change the write its route runs. Read inside the caller's transaction, after the rest of the
 * import was applied (so the segments its rules name exist).
 */
export async function requestedChanges(trx: Db, current: ProjectState, desired: DesiredState, mode: ImportMode, environmentKey: string): Promise<RequestedChange[]> {
  const plan = planImport(current, desired, mode);
  const changes: RequestedChange[] = [];
  for (const item of [...plan.create, ...plan.update, ...plan.delete].filter((entry) => entry.resource === 'flag' && entry.environment === environmentKey)) {
    const wanted = desired.flags.get(environmentKey)?.get(item.key);
    const stored = current.flags.get(environmentKey)?.get(item.key);
    if (!stored) {
      changes.push({ op: 'flag.create', flag: { key: item.key, ...flagBody(wanted!, STORED_FLAG_FIELDS) } as FlagCreate, rules: wanted!.rules.map(ruleBody) });
      continue;
    }
    const flag_id = stored.id!;
    if (!wanted) {
      changes.push({ op: 'flag.delete', flag_id });
      continue;
    }
    const fields = STORED_FLAG_FIELDS.filter((field) => item.fields.includes(field));
    if (fields.length > 0) changes.push({ op: 'flag.update', flag_id, set: flagBody(wanted, fields) as FlagPut });
    if (!item.fields.includes('rules')) continue;
    const change = rulesChange(await listRules(trx, [flag_id]), wanted.rules);
    for (const rule of change.remove) changes.push({ op: 'rule.delete', flag_id, rule_id: rule.id });
    for (const [rule, wantedRule] of change.update) {
      const { id: _id, flag_id: _f, created_at: _c, updated_at: _u, ...fieldsNow } = rule;
      if (!sameJson(fieldsNow, wantedRule)) changes.push({ op: 'rule.update', flag_id, rule_id: rule.id, set: ruleBody(wantedRule) });
    }
    for (const rule of change.create) changes.push({ op: 'rule.create', flag_id, rule: ruleBody(rule) });
  }
  return changes;
}

/**
 * An import's plan and its application (docs/flags-as-code.md). The plan compares the state a
 * checked document asks for with the project's, by key: environments, segments, and each flag in
 * each environment the document names. Applying it runs, change by change, the very writes the
 * API's routes run (environment-writes.ts, segment-writes.ts, and change-ops.ts for flags and
 * rules), inside the caller's transaction: an import can do what the same changes sent one by one
 * could do, and is refused what they would be refused (a flag over its cost, a broken
 * prerequisite, a segment still in use). Where an environment needs approvals, its part becomes
 * the same changes in one change request.
 */
import type { Db } from '../../db/database.js';
import { newId } from '../../db/values.js';
import { nextTurn, pacer } from '../../pace.js';
import { AppError, Invalid, Unavailable } from '../../errors.js';
import type { Actor } from '../changes/changes.schemas.js';
import type { ProjectWrites, RecordChange } from '../changes/project-writes.js';
import { CHANGE_REQUEST_LIMIT } from '../change-requests/change-requests.schemas.js';
import { createRequestWrite } from '../change-requests/change-requests.writes.js';
import { runChange, type RequestedChange } from '../change-requests/change-ops.js';
import { createEnvironmentWrite, updateEnvironmentWrite } from '../environments/environment-writes.js';
import type { FlagCreate, FlagPut } from '../flags/flag-writes.js';
import { PrerequisiteBatch } from '../flags/prerequisites.js';
import { listRules } from '../flags/rules.repository.js';
import type { RuleCreate } from '../flags/rule-writes.js';
import { createSegmentWrite, deleteSegmentWrite, updateSegmentWrite } from '../segments/segment-writes.js';
import { checkDocument, compileDocumentCheck, type DesiredState } from './document.check.js';
import { FLAG_FIELDS, readProjectState, sameJson, STORED_FLAG_FIELDS, type FlagState, type ProjectState, type RuleState } from './state.js';

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

type StoredRule = Awaited<ReturnType<typeof listRules>>[number];

/**
 * How a flag's rules become the wanted ones: the rule at each position is updated in place (its
 * id and history stay), extra ones deleted, missing ones created. All are created anew instead
 * when keeping one in place would put two rules of equal priority in another order (they are
 * ordered by age), or when one kept in place serves a variant the flag is losing (the flag's
 * variants change between its rules' deletion and their update, and a rule may not serve a
 * variant the flag lacks).
 */
function rulesChange(stored: StoredRule[], wanted: RuleState[], variantsAfter: ReadonlySet<string>) {
  const kept = Math.min(stored.length, wanted.length);
  const age = (rule: StoredRule) => `${rule.created_at} ${rule.id}`;
  const anew = { update: [], remove: stored, create: wanted };
  for (let i = 1; i < kept; i++) {
    if (wanted[i]!.priority === wanted[i - 1]!.priority && age(stored[i]!) < age(stored[i - 1]!)) return anew;
  }
  if (stored.slice(0, kept).some((rule) => rule.variant !== null && !variantsAfter.has(rule.variant))) return anew;
  return { update: stored.slice(0, kept).map((rule, i) => [rule, wanted[i]!] as const), remove: stored.slice(kept), create: wanted.slice(kept) };
}

/** A rule of the document as a rule's create or PUT body (the API's fields; no null where the body takes none). */
function ruleBody(rule: RuleState): RuleCreate {
  const { rule_type, rule_value, conditions, enabled, priority, rollout_percentage, serve, variant } = rule;
  return { rule_type, rule_value, ...(conditions ? { conditions } : {}), enabled, priority, rollout_percentage, serve, variant } as RuleCreate;
}

const BODY_FIELDS = [...STORED_FLAG_FIELDS, 'prerequisites'] as const;

/** A flag's own fields of the document as a create or PUT body. */
const flagBody = (flag: FlagState, fields: readonly (typeof BODY_FIELDS)[number][]) =>
  Object.fromEntries(fields.map((field) => [field, field === 'variants' ? flag.variants.map(({ description, ...variant }) => (description == null ? variant : { ...variant, description })) : flag[field]]));

/** The keys of `flags` with every flag's parents (among them) before it. */
function parentsFirst(flags: ReadonlyMap<string, FlagState>, keys: readonly string[]): string[] {
  const order: string[] = [];
  const among = new Set(keys);
  const placed = new Set<string>();
  const place = (key: string, path: Set<string>) => {
    if (placed.has(key) || path.has(key) || !among.has(key)) return;
    path.add(key);
    for (const parent of flags.get(key)?.prerequisites ?? []) place(parent.flag_key, path);
    placed.add(key);
    order.push(key);
  };
  for (const key of keys) place(key, new Set());
  return order;
}

/**
 * The plan's changes to one environment's flags, as the changes of a change request, in an order
 * their writes accept: flags created and updated parents first (a child may name a parent's new
 * variant), deleted last and children first (a flag named by another cannot go); within a flag,
 * its rules deleted before its own fields change (a variant no rule serves may go), updated and
 * created after (a rule may serve a variant just added).
 */
export async function flagChanges(trx: Db, plan: Plan, current: ProjectState, desired: DesiredState, environmentKey: string): Promise<RequestedChange[]> {
  const wantedFlags = desired.flags.get(environmentKey) ?? new Map<string, FlagState>();
  const storedFlags = current.flags.get(environmentKey) ?? new Map<string, FlagState>();
  const items = [...plan.create, ...plan.update].filter((item) => item.resource === 'flag' && item.environment === environmentKey);
  const fieldsOf = new Map(items.map((item) => [item.key, item.fields]));
  const deleted = plan.delete.filter((item) => item.resource === 'flag' && item.environment === environmentKey).map((item) => item.key);
  const changes: RequestedChange[] = [];
  for (const key of parentsFirst(wantedFlags, items.map((item) => item.key))) {
    const wanted = wantedFlags.get(key)!;
    const stored = storedFlags.get(key);
    if (!stored) {
      changes.push({ op: 'flag.create', flag: { key, ...flagBody(wanted, BODY_FIELDS) } as FlagCreate, rules: wanted.rules.map(ruleBody) });
      continue;
    }
    const flag_id = stored.id!;
    const itemFields = fieldsOf.get(key)!;
    const fields = BODY_FIELDS.filter((field) => itemFields.includes(field));
    const rules = itemFields.includes('rules') ? rulesChange(await listRules(trx, [flag_id]), wanted.rules, new Set(wanted.variants.map((variant) => variant.key))) : { update: [], remove: [], create: [] };
    for (const rule of rules.remove) changes.push({ op: 'rule.delete', flag_id, rule_id: rule.id });
    if (fields.length > 0) changes.push({ op: 'flag.update', flag_id, set: flagBody(wanted, fields) as FlagPut });
    for (const [rule, wantedRule] of rules.update) {
      const { id: _id, flag_id: _f, created_at: _c, updated_at: _u, ...fieldsNow } = rule;
      if (!sameJson(fieldsNow, wantedRule)) changes.push({ op: 'rule.update', flag_id, rule_id: rule.id, set: ruleBody(wantedRule) });
    }
    for (const rule of rules.create) changes.push({ op: 'rule.create', flag_id, rule: ruleBody(rule) });
  }
  for (const key of parentsFirst(storedFlags, deleted).reverse()) changes.push({ op: 'flag.delete', flag_id: storedFlags.get(key)!.id! });
  return changes;
}

/** Where the import made a change request instead of writing (id null in a dry run: it would make one). */
export interface ImportRequest {
  environment: string;
  id: string | null;
}

/** What an import writes as: who, in which project, under which import id (null: a dry run). */
export interface ImportContext {
  projectId: string;
  actor: Actor;
  importId: string | null;
}

/** Runs `write`; a refusal says which resource of the document it concerns, keeping its status. */
async function refusedAs<T>(where: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof AppError && !(error instanceof Unavailable)) error.message = `${where}: ${error.message}`;
    throw error;
  }
}

/**
 * Applies `plan` (of `desired` over `current`) inside the caller's transaction, through the
 * routes' writes, in an order they accept: environments; segments created and updated (before
 * the rules that name them); each environment's flags, or, where `reviewed` names the
 * environment, one change request holding them; segments deleted last (once no rule names
 * them: a segment that a flag under review still names stays, and the import is refused).
 * Returns the change requests made.
 */
export async function applyImport(trx: Db, record: RecordChange, context: ImportContext, current: ProjectState, desired: DesiredState, plan: Plan, reviewed: readonly string[]): Promise<ImportRequest[]> {
  const { projectId, actor } = context;
  const pace = pacer();
  const of = (resource: string, list: PlanItem[]) => list.filter((item) => item.resource === resource);
  const wantedEnvironment = new Map(desired.environments.map((env) => [env.key, env]));
  const environmentIds = new Map(current.environments.map((env) => [env.key, env.id!]));
  for (const { key } of of('environment', plan.create)) {
    environmentIds.set(key, (await createEnvironmentWrite(trx, record, projectId, { key, name: wantedEnvironment.get(key)!.name })).id);
  }
  for (const { key } of of('environment', plan.update)) {
    await updateEnvironmentWrite(trx, record, { projectId, envId: environmentIds.get(key)! }, { name: wantedEnvironment.get(key)!.name }, null);
  }

  const wantedSegment = new Map(desired.segments.map((segment) => [segment.key, segment]));
  const segmentIds = new Map(current.segments.map((segment) => [segment.key, segment.id!]));
  for (const { key } of of('segment', plan.create)) {
    const { name, description, conditions } = wantedSegment.get(key)!;
    await refusedAs(`segments "${key}"`, () => createSegmentWrite(trx, record, projectId, { key, name, description, conditions }));
    await pace();
  }
  for (const { key, fields } of of('segment', plan.update)) {
    const wanted = wantedSegment.get(key)!;
    const changes = Object.fromEntries(fields.map((field) => [field, wanted[field as 'name' | 'description' | 'conditions']]));
    await refusedAs(`segments "${key}"`, () => updateSegmentWrite(trx, record, { projectId, segmentId: segmentIds.get(key)! }, changes));
    await pace();
  }

  const requests: ImportRequest[] = [];
  for (const env of desired.environments) {
    const changes = await flagChanges(trx, plan, current, desired, env.key);
    if (changes.length === 0) continue;
    const scope = { projectId, envId: environmentIds.get(env.key)! };
    if (reviewed.includes(env.key)) {
      if (changes.length > CHANGE_REQUEST_LIMIT) throw new Invalid(`The import changes ${changes.length} things in ${env.key}, more than one change request holds (${CHANGE_REQUEST_LIMIT}): import it in parts`);
      const what = context.importId === null ? 'this import' : `import ${context.importId}`;
      const request = await createRequestWrite(trx, record, scope, { title: `Import into ${env.key}`, description: `The part of ${what} that changes ${env.key}, which needs approval.`, changes }, actor);
      requests.push({ environment: env.key, id: context.importId === null ? null : request.id });
      continue;
    }
    const flagKeys = new Map([...(current.flags.get(env.key) ?? [])].map(([key, flag]) => [flag.id, key]));
    const batch = new PrerequisiteBatch();
    for (const change of changes) {
      const flag = 'flag' in change ? change.flag.key : flagKeys.get((change as { flag_id: string }).flag_id);
      await refusedAs(`flags "${flag}" in ${env.key} (${change.op})`, () => runChange(trx, record, { env: scope, author: actor, changeRequestId: null, batch }, change));
      await pace();
    }
    await refusedAs(`flags in ${env.key}`, () => batch.check(trx));
  }

  for (const { key } of of('segment', plan.delete)) {
    await refusedAs(`segments "${key}"`, () => deleteSegmentWrite(trx, record, { projectId, segmentId: segmentIds.get(key)! }));
    await pace();
  }
  return requests;
}

/** The environments, among those the document names, that need approved change requests (approvals_required ≥ 1). */
const reviewedKeys = (state: ProjectState, desired: DesiredState) => state.environments.filter((env) => env.approvals_required > 0 && desired.managedEnvironments.has(env.key)).map((env) => env.key);

/**
 * Checks the document against the project and applies its plan in one transaction through the
 * change path (import.ts), every event carrying the import's id; a dry run (the default) does
 * the same and undoes it, so that it meets every refusal the import would. An import that changes
 * nothing writes nothing (no revision, no event). The flags of an environment that needs
 * approvals are not written: that part of the plan becomes one change request of the environment
 * (docs/change-management.md), in the same transaction, listed in `change_requests`.
 */
export async function runImport(db: Db, writes: ProjectWrites, actor: Actor, projectId: string, input: unknown, mode: ImportMode, dryRun: boolean): Promise<Plan & { mode: ImportMode; dry_run: boolean; import_id: string | null; change_requests: ImportRequest[] }> {
  compileDocumentCheck();
  await nextTurn();
  // Planned first outside the transaction: writes.apply bumps the revision even when nothing is recorded, so an import that changes nothing answers here (no revision, no write lock).
  const before = await readProjectState(db, projectId);
  const unchanged = planImport(before, checkDocument(input, before, mode), mode);
  if (isEmpty(unchanged)) return { mode, dry_run: dryRun, import_id: null, ...unchanged, change_requests: [] };
  await nextTurn(); // a large document takes a while to check: let other requests in before the transaction
  const importId = dryRun ? null : newId();
  // Checked and planned again inside the transaction: the project may have changed meanwhile.
  const write = async (trx: Db, record: RecordChange) => {
    const current = await readProjectState(trx, projectId);
    const desired = checkDocument(input, current, mode);
    const plan = planImport(current, desired, mode);
    await nextTurn();
    const touched = new Set([...plan.create, ...plan.update, ...plan.delete].filter((item) => item.resource === 'flag').map((item) => item.environment!));
    const reviewed = reviewedKeys(current, desired).filter((key) => touched.has(key));
    return { ...plan, change_requests: await applyImport(trx, record, { projectId, actor, importId }, current, desired, plan, reviewed) };
  };
  const applied = dryRun ? await writes.rehearse(actor, projectId, write) : await writes.apply(actor, projectId, write, { import_id: importId ?? undefined });
  return { mode, dry_run: dryRun, import_id: importId, ...applied };
}

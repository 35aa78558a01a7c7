/**
 * The check of a document before any import (docs/flags-as-code.md): first its shape against the
 * JSON Schema the server serves (every problem, with its path), then, for each part whose shape is
 * right, the same checks the API makes on a flag, a rule, a variant, a condition and a segment
 * (the functions the routes call), so that an import accepts exactly what the API accepts.
 */
import { Ajv, type ErrorObject } from 'ajv';
import { prerequisiteProblems, type PrerequisiteFlag } from '@guidon/engine';
import { normalizedPrerequisites, toDefinitions, type Prerequisite } from '../flags/prerequisites.js';
import { flagProblem, Patterns, segmentProblem, type Condition, type RuleType } from '@guidon/engine';
import { Invalid, InvalidDocument, type Problem } from '../../errors.js';
import { onFirstUse } from '../../http/compilers.js';
import { ruleTargetProblems, checkedRuleTarget } from '../flags/rules.checks.js';
import { checkOffVariant, checkRuleVariant, checkVariants, type Variant } from '../flags/variants.js';
import { conditionProblems, storedConditions } from '../segments/segments.repository.js';
import { documentJsonSchema, type GuidonDocument } from './document.schemas.js';
import type { EnvironmentState, FlagState, ProjectState, RuleState, SegmentState } from './state.js';

// Compiled when first used, not at start (docs/performance.md, start-up).
const shapeValidator = onFirstUse(() => new Ajv({ allErrors: true, strict: false }).compile<GuidonDocument>(documentJsonSchema));
/** Compiles the shape's validator now if it is not yet (tens of milliseconds, once a process): an import does it in a turn of its own. */
export const compileDocumentCheck = (): void => void shapeValidator();

/** `/flags/2/environments/production` → `flags[2].environments.production`. */
function pathOf(pointer: string, child?: string): string {
  const parts = pointer.split('/').slice(1).map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) parts.push(child);
  return parts.reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path === '' ? part : `${path}.${part}`), '');
}

/**
 * Ajv's errors as one problem per place. A nullable or one-of field fails in every branch
 * (`must be string`, `must be null`, `must match a schema in anyOf`): those are folded into one
 * message, and dropped where a more precise one (a length, a pattern) says what is wrong.
 */
function shapeProblems(errors: readonly ErrorObject[]): Problem[] {
  const byPath = new Map<string, ErrorObject[]>();
  for (const error of errors) {
    const child = error.keyword === 'required' ? (error.params as { missingProperty: string }).missingProperty : error.keyword === 'additionalProperties' ? (error.params as { additionalProperty: string }).additionalProperty : undefined;
    const path = pathOf(error.instancePath, child);
    byPath.set(path, [...(byPath.get(path) ?? []), error]);
  }
  const problems: Problem[] = [];
  const deeper = (path: string) => [...byPath.keys()].some((other) => other !== path && (path === '' || other.startsWith(`${path}.`) || other.startsWith(`${path}[`)));
  for (const [path, found] of byPath) {
    const where = path === '' ? 'the document' : path;
    const precise = found.filter((error) => !['anyOf', 'type', 'const', 'enum'].includes(error.keyword));
    const messages = new Set<string>();
    for (const error of precise) {
      if (error.keyword === 'required') messages.add('is required');
      else if (error.keyword === 'additionalProperties') messages.add('is not a field of this object (a misspelt name?)');
      else messages.add(error.message ?? error.keyword);
    }
    // A one-of whose branch failed deeper (a condition of a rule's nullable list): the deeper error says it.
    if (messages.size === 0 && deeper(path)) continue;
    if (messages.size === 0) {
      const types = found.filter((error) => error.keyword === 'type').map((error) => String((error.params as { type: string }).type));
      const allowed = found.flatMap((error) => (error.keyword === 'const' ? [(error.params as { allowedValue: unknown }).allowedValue] : error.keyword === 'enum' ? (error.params as { allowedValues: unknown[] }).allowedValues : []));
      if (allowed.length > 0) messages.add(`must be one of ${allowed.map((value) => JSON.stringify(value)).join(', ')}`);
      else if (types.length > 0) messages.add(`must be ${types.join(' or ')}`);
      else messages.add(found[0]!.message ?? 'is not valid');
    }
    for (const message of messages) problems.push({ path, message: `${where}: ${message}` });
  }
  return problems;
}

/** A message of the API's checks, placed: `variants[1] …` below the entry, anything else after it. */
const placed = (base: string, message: string) => (/^(variants\[|off_variant |variant |rule_value |conditions |bucketing_key:)/.test(message) ? `${base}.${message}` : `${base}: ${message}`);

/** The message of an Invalid that a check throws, else null. */
function problemOf(check: () => unknown): string | null {
  try {
    check();
    return null;
  } catch (error) {
    if (error instanceof Invalid) return error.message;
    throw error;
  }
}

/** What an import makes of a document: the state it asks for, and the environments it manages. */
export interface DesiredState extends Omit<ProjectState, 'project'> {
  /** The environments the document names: an import creates, changes and deletes flags only there. */
  managedEnvironments: Set<string>;
}

/**
 * The document as a state, or InvalidDocument listing every problem. `current` is the project as
 * it is: in `merge` mode its segments stay, so rules may name them.
 */
export function checkDocument(input: unknown, current: ProjectState, mode: 'merge' | 'replace'): DesiredState {
  const validateShape = shapeValidator();
  if (!validateShape(input)) {
    const problems = shapeProblems(validateShape.errors ?? []);
    // Where the shape is wrong, the API's checks would read garbage: they run on the rest.
    if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new InvalidDocument(problems);
    throw new InvalidDocument([...problems, ...meaningProblems(input as GuidonDocument, current, mode, problems).problems]);
  }
  const { problems, desired } = meaningProblems(input, current, mode, []);
  if (problems.length > 0) throw new InvalidDocument(problems);
  return desired;
}

/** The API's checks on every part of the document that has the right shape. */
function meaningProblems(document: GuidonDocument, current: ProjectState, mode: 'merge' | 'replace', shape: Problem[]) {
  const problems: Problem[] = [];
  const add = (path: string, message: string) => problems.push({ path, message });
  const under = (path: string, parent: string) => path === parent || path.startsWith(`${parent}.`) || path.startsWith(`${parent}[`);
  /** A shape problem at path, inside it, or at what holds it: the API's checks skip that part. */
  const shapeWrong = (path: string) => shape.some((problem) => under(problem.path, path) || under(path, problem.path));
  /** A shape problem at path or at what holds it (the part is not even the right kind of value). */
  const shapeWrongAbove = (path: string) => shape.some((problem) => under(path, problem.path));
  const list = <T>(value: unknown): T[] => (Array.isArray(value) ? (value as T[]) : []);

  const duplicates = <T>(items: T[], keyOf: (item: T) => unknown, base: string, what: string) => {
    const seen = new Set<unknown>();
    items.forEach((item, i) => {
      const key = keyOf(item);
      if (typeof key !== 'string') return;
      if (seen.has(key)) add(`${base}[${i}].key`, `${base}[${i}].key: ${what} "${key}" appears more than once`);
      seen.add(key);
    });
  };

  const environments: EnvironmentState[] = [];
  const documentEnvironments = list<GuidonDocument['environments'][number]>(document.environments);
  duplicates(documentEnvironments, (env) => env?.key, 'environments', 'environment');
  const currentEnvironments = new Map(current.environments.map((env) => [env.key, env]));
  documentEnvironments.forEach((env, i) => {
    if (shapeWrong(`environments[${i}]`)) return;
    const approvals = env.approvals_required ?? 0;
    const has = currentEnvironments.get(env.key)?.approvals_required ?? 0;
    // Approvals are an owner's to set on the environment (as the project's name is): an import never changes them.
    if (approvals !== has) add(`environments[${i}].approvals_required`, `environments[${i}].approvals_required: an import does not change approvals; ${env.key} ${currentEnvironments.has(env.key) ? 'has' : 'would be created with'} ${has}`);
    environments.push({ key: env.key, name: env.name, approvals_required: has });
  });
  const managed = new Set(environments.map((env) => env.key));
  /** Environment key NUL flag key → the path of the flag's prerequisites there. */
  const prerequisitePaths = new Map<string, string>();

  // Each distinct pattern of the document compiled once, whatever the number of conditions that name it.
  const patterns = new Patterns();
  const segments: SegmentState[] = [];
  const documentSegments = list<NonNullable<GuidonDocument['segments']>[number]>(document.segments);
  duplicates(documentSegments, (segment) => segment?.key, 'segments', 'segment');
  documentSegments.forEach((segment, s) => {
    if (shapeWrong(`segments[${s}]`)) return;
    const wrong = conditionProblems(segment.conditions, null, (i) => `segments[${s}].conditions[${i}]`, patterns);
    wrong.forEach((message) => add(message.slice(0, message.search(/ \(|:/)), message));
    if (wrong.length > 0) return;
    const conditions = storedConditions(segment.conditions);
    // What its conditions may cost together (docs/targeting.md, "What a flag may cost").
    const limit = segmentProblem(conditions, patterns);
    if (limit !== null) add(`segments[${s}].conditions`, `segments[${s}].conditions: ${limit}`);
    else segments.push({ key: segment.key, name: segment.name, description: segment.description ?? null, conditions });
  });
  const segmentKeys = new Set([...documentSegments.map((segment) => segment?.key), ...(mode === 'merge' ? current.segments.map((segment) => segment.key) : [])]);
  /** The segments the flags' rules may name, as the import leaves them: what a flag's cost counts. */
  const segmentConditions = new Map([...(mode === 'merge' ? current.segments : []), ...segments].map((segment) => [segment.key, segment.conditions]));

  const flags = new Map<string, Map<string, FlagState>>([...managed].map((key) => [key, new Map()]));
  const documentFlags = list<GuidonDocument['flags'][number]>(document.flags);
  duplicates(documentFlags, (flag) => flag?.key, 'flags', 'flag');
  documentFlags.forEach((flag, f) => {
    if (shapeWrong(`flags[${f}].key`) || shapeWrong(`flags[${f}].name`) || typeof flag.environments !== 'object' || flag.environments === null) return;
    for (const [envKey, entry] of Object.entries(flag.environments)) {
      const base = `flags[${f}].environments.${envKey}`;
      if (!managed.has(envKey)) {
        add(base, `${base}: environment "${envKey}" is not in the document's environments`);
        continue;
      }
      if (shapeWrongAbove(base)) continue;
      const before = problems.length;
      const variantsWrong = shapeWrong(`${base}.variants`) || shapeWrong(`${base}.off_variant`);
      const variants = variantsWrong ? null : checkedOr<Variant[]>(() => checkVariants(entry.variants ?? []), `${base}.variants`);
      const off_variant = variants && checkedOr(() => checkOffVariant(variants, entry.off_variant ?? null), `${base}.off_variant`);
      const rules: RuleState[] = [];
      if (!shapeWrongAbove(`${base}.rules`)) list<NonNullable<typeof entry.rules>[number]>(entry.rules).forEach((rule, r) => {
        const at = `${base}.rules[${r}]`;
        if (shapeWrong(at)) return;
        const type = rule.rule_type as RuleType;
        const serve = rule.serve ?? true;
        const priority = rule.priority ?? 0;
        const conditions = (rule.conditions ?? undefined) as Condition[] | undefined;
        for (const message of ruleTargetProblems(type, rule.rule_value, conditions, segmentKeys, (i) => `${at}.conditions[${i}]`, patterns)) {
          const condition = /^(.*\.conditions\[\d+\])/.exec(message)?.[1];
          add(condition ?? `${at}.${type === 'conditions' ? 'conditions' : 'rule_value'}`, condition ? message : placed(at, message));
        }
        if (variants) {
          const wrong = problemOf(() => checkRuleVariant({ key: flag.key, variants }, rule.variant ?? null, serve));
          if (wrong !== null) add(`${at}.variant`, placed(at, wrong));
        }
        const previous = r > 0 ? (list<{ priority?: number }>(entry.rules)[r - 1]?.priority ?? 0) : Infinity;
        if (priority > previous) add(`${at}.priority`, `${at}.priority: rules are listed in evaluation order, highest priority first; ${priority} follows ${previous}`);
        if (problems.length > before) return;
        const target = checkedRuleTarget(type, rule.rule_value, conditions, segmentKeys);
        rules.push({ rule_type: type, rule_value: type === 'conditions' ? null : target.rule_value, conditions: target.conditions, enabled: rule.enabled ?? true, priority, rollout_percentage: rule.rollout_percentage ?? 100, serve, variant: rule.variant ?? null });
      });
      const prerequisites = normalizedPrerequisites(entry.prerequisites ?? []);
      prerequisitePaths.set(`${envKey}\u0000${flag.key}`, `${base}.prerequisites`);
      // Its rules taken together: at most 100, 256 KiB of conditions, what they may cost (docs/targeting.md).
      if (problems.length === before) {
        const limit = flagProblem(rules, segmentConditions, patterns);
        if (limit !== null) add(`${base}.rules`, `${base}.rules: ${limit}`);
      }
      if (problems.length > before || !variants || shapeWrong(base) || shapeWrong(`flags[${f}].description`)) continue;
      flags.get(envKey)!.set(flag.key, {
        name: entry.name ?? flag.name,
        description: entry.description !== undefined ? entry.description : (flag.description ?? null),
        enabled: entry.enabled ?? false,
        rollout_percentage: entry.rollout_percentage ?? 0,
        everyone_else: entry.everyone_else ?? 'rollout',
        bucketing_key: entry.bucketing_key ?? null,
        variants,
        off_variant: off_variant ?? null,
        prerequisites,
        rules,
      });
    }
  });

  // Prerequisites over each environment as it will be (docs/prerequisites.md): what the document
  // sets, and in merge mode the flags it leaves as they are.
  for (const [envKey, wanted] of flags) {
    const graph = new Map<string, PrerequisiteFlag>();
    if (mode === 'merge') for (const [key, flag] of current.flags.get(envKey) ?? []) graph.set(key, { key, variants: flag.variants, prerequisites: toDefinitions(flag.prerequisites as Prerequisite[]) });
    for (const [key, flag] of wanted) graph.set(key, { key, variants: flag.variants, prerequisites: toDefinitions(flag.prerequisites as Prerequisite[]) });
    for (const [key, problem] of prerequisiteProblems([...graph.values()], wanted.keys())) {
      const path = prerequisitePaths.get(`${envKey}\u0000${key}`);
      if (path !== undefined) add(path, `${path}: ${problem.replace(/^prerequisites(\[\d+\])?: /, '')}`);
    }
  }

  if (mode === 'replace') {
    // A segment the document drops must not stay in use by a flag of an environment it does not manage.
    const kept = new Set(documentSegments.map((segment) => segment?.key));
    const envKeyOf = new Map(current.environments.map((env) => [env.id, env.key]));
    for (const segment of current.segments) {
      if (kept.has(segment.key)) continue;
      const users = (segment.used_by ?? []).filter((use) => !managed.has(envKeyOf.get(use.environment_id) ?? ''));
      if (users.length > 0) add('segments', `segments: segment "${segment.key}" would be deleted, but ${users.map((use) => `flag "${use.flag_key}" in ${envKeyOf.get(use.environment_id)}`).join(', ')} (an environment the document does not name) uses it`);
    }
  }
  return { problems, desired: { environments: environments.sort((a, b) => (a.key < b.key ? -1 : 1)), segments: segments.sort((a, b) => (a.key < b.key ? -1 : 1)), flags, managedEnvironments: managed } };

  /** The value a check returns, or null with its problem added at `path`. */
  function checkedOr<T>(check: () => T, path: string): T | null {
    try {
      return check();
    } catch (error) {
      if (!(error instanceof Invalid)) throw error;
      const base = path.slice(0, path.lastIndexOf('.'));
      add(path, placed(base, error.message));
      return null;
    }
  }
}

/**
 * An Unleash 5–8 export (`features-batch/export`) as a Guidon document (docs/flags-as-code.md,
 * "Moving from Unleash"). The mapping is exact or it is not made: Guidon's rollout and variant
 * hashing are Unleash's (murmur3 of "<group>:<id>", seeds 0 and 86028157), so a feature whose
 * every part maps keeps every user's on/off and variant; a feature with any part that would not
 * is left out of that environment, and `skipped` says why. What it maps follows the evaluation
 * of Unleash's Node SDK (unleash-client 6), the reference of the test against a real Unleash.
 */
import { Ajv } from 'ajv';
import { Type, type Static } from 'typebox';
import { parseDate } from '@guidon/engine';
import { InvalidDocument } from '../../errors.js';
import { onFirstUse } from '../../http/compilers.js';
import { DOCUMENT_VERSION, type GuidonDocument } from './document.schemas.js';
import { checkDocument } from './document.check.js';

export interface Skipped {
  feature: string | null;
  environment: string | null;
  what: string;
  reason: string;
}

const Constraint = Type.Object({
  contextName: Type.String(),
  operator: Type.String(),
  values: Type.Optional(Type.Array(Type.String())),
  value: Type.Optional(Type.String()),
  inverted: Type.Optional(Type.Boolean()),
  caseInsensitive: Type.Optional(Type.Boolean()),
});
const UnleashVariant = Type.Object({
  name: Type.String(),
  weight: Type.Number(),
  weightType: Type.Optional(Type.String()),
  stickiness: Type.Optional(Type.String()),
  payload: Type.Optional(Type.Object({ type: Type.String(), value: Type.String() })),
  overrides: Type.Optional(Type.Array(Type.Unknown())),
});
const UnleashExport = Type.Object({
  features: Type.Array(Type.Object({ name: Type.String({ minLength: 1 }), description: Type.Optional(Type.Union([Type.String(), Type.Null()])), impressionData: Type.Optional(Type.Boolean()) })),
  featureStrategies: Type.Optional(
    Type.Array(
      Type.Object({
        name: Type.String(),
        featureName: Type.String(),
        parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
        constraints: Type.Optional(Type.Array(Constraint)),
        segments: Type.Optional(Type.Array(Type.Integer())),
        variants: Type.Optional(Type.Array(UnleashVariant)),
        disabled: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
        sortOrder: Type.Optional(Type.Number()),
      }),
    ),
  ),
  featureEnvironments: Type.Optional(Type.Array(Type.Object({ featureName: Type.String(), environment: Type.String({ minLength: 1 }), enabled: Type.Boolean(), variants: Type.Optional(Type.Array(UnleashVariant)) }))),
  segments: Type.Optional(Type.Array(Type.Object({ id: Type.Integer(), name: Type.String() }))),
  featureTags: Type.Optional(Type.Array(Type.Object({ featureName: Type.String() }))),
  contextFields: Type.Optional(Type.Array(Type.Unknown())),
  dependencies: Type.Optional(Type.Array(Type.Object({ feature: Type.String(), dependencies: Type.Array(Type.Unknown()) }))),
});
const UnleashSegment = Type.Object({ id: Type.Integer(), name: Type.String(), description: Type.Optional(Type.Union([Type.String(), Type.Null()])), constraints: Type.Array(Constraint) });
const UnleashInput = Type.Union([
  UnleashExport,
  Type.Array(UnleashExport, { minItems: 1 }),
  Type.Object({ exports: Type.Array(UnleashExport, { minItems: 1 }), segments: Type.Optional(Type.Union([Type.Array(UnleashSegment), Type.Object({ segments: Type.Array(UnleashSegment) })])) }),
]);
type UnleashExport = Static<typeof UnleashExport>;
type Strategy = NonNullable<UnleashExport['featureStrategies']>[number];
type UnleashConstraint = Static<typeof Constraint>;
type Variant = Static<typeof UnleashVariant>;
type SegmentDefinition = Static<typeof UnleashSegment>;

// Compiled when first used: at start it cost a tenth of a second that a server importing nothing pays for nothing.
const inputValidator = onFirstUse(() => new Ajv({ allErrors: false, strict: false }).compile(JSON.parse(JSON.stringify(UnleashInput)) as object));

/** A Guidon key (flag, segment, variant: `^[a-z][a-z0-9_-]*$`, at most 100) made of an Unleash name. */
export function keyOf(name: string, maxLength = 100): string {
  let key = name.toLowerCase().replace(/[^a-z0-9_-]+/g, '_');
  if (!/^[a-z]/.test(key)) key = `f_${key}`;
  return key.slice(0, maxLength);
}
const environmentKeyOf = (name: string) => name.toLowerCase().replace(/[^a-z0-9_-]+/g, '_').slice(0, 64) || 'default';

/** Unleash's standard context fields as Guidon attributes; any other field (a property) keeps its name. */
const ATTRIBUTES: Record<string, string> = { userId: 'user_id', sessionId: 'session_id', remoteAddress: 'remote_address', appName: 'app_name', environment: 'environment', currentTime: 'current_time' };
/** Names Guidon fills itself: a property of that name would not reach a condition. */
const GUIDON_BUILT_IN = new Set(['user_id', 'user_email', 'email_domain', 'environment', 'current_time']);

type Condition = { attribute?: string | null; operator: string; values?: string[]; negate?: boolean; case_insensitive?: boolean };
/** A constraint as a condition; `true`/`false` when it holds always / never; a string: why it cannot be mapped. */
type Mapped = Condition | boolean | string;

/** Unleash's own cleaning of a constraint's values: empty ones dropped, the others trimmed. */
const cleaned = (values: readonly string[] = []) => values.filter((value) => value !== '').map((value) => value.trim());
const VERSION = /^\d+\.\d+\.\d+(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$/;
const IPV4_PART = /^(?:\d{1,3}\.){3}\d{1,3}(?:\/\d{1,2})?$/;
/** A date Unleash reads with `new Date(value)` and Guidon reads the same: a date, or a date-time with its offset. */
const UNAMBIGUOUS_DATE = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

function mapConstraint(constraint: UnleashConstraint): Mapped {
  const { operator } = constraint;
  const negate = constraint.inverted === true;
  const constant = (value: boolean) => (negate ? !value : value);
  // DATE_ operators read the current time whatever the field; an unknown operator never holds (even inverted).
  const standard = Object.hasOwn(ATTRIBUTES, constraint.contextName);
  const attribute = operator.startsWith('DATE_') ? 'current_time' : standard ? ATTRIBUTES[constraint.contextName]! : constraint.contextName;
  if (!standard && GUIDON_BUILT_IN.has(attribute)) return `the context field "${constraint.contextName}" is a name Guidon fills itself`;
  if (attribute.length > 64) return `the context field "${constraint.contextName}" is longer than 64 characters`;
  const condition = (values: string[], extra: Partial<Condition> = {}): Condition => ({ attribute, operator, values, ...(negate ? { negate: true } : {}), ...extra });
  switch (operator) {
    case 'IN':
    case 'NOT_IN': {
      // Unleash compares IN and NOT_IN exactly, whatever caseInsensitive says.
      const values = cleaned(constraint.values);
      if (values.length === 0) return constant(operator === 'NOT_IN');
      return condition(values);
    }
    case 'STR_CONTAINS':
    case 'STR_STARTS_WITH':
    case 'STR_ENDS_WITH': {
      const values = cleaned(constraint.values);
      if (values.length === 0) return constant(false);
      return condition(values, constraint.caseInsensitive ? { case_insensitive: true } : {});
    }
    case 'NUM_EQ':
    case 'NUM_GT':
    case 'NUM_GTE':
    case 'NUM_LT':
    case 'NUM_LTE': {
      const number = Number(constraint.value);
      if (constraint.value === undefined || Number.isNaN(number)) return constant(false);
      if (!Number.isFinite(number) || constraint.value.trim() === '') return `the number "${constraint.value}" of a ${operator} constraint`;
      return condition([constraint.value.trim()]);
    }
    case 'DATE_AFTER':
    case 'DATE_BEFORE': {
      const value = constraint.value ?? '';
      if (Number.isNaN(new Date(value).getTime())) return constant(false);
      if (!UNAMBIGUOUS_DATE.test(value) || parseDate(value) === undefined) return `the date "${value}" (Guidon takes ISO 8601 dates, and date-times with an offset: Unleash's SDKs read one without an offset as local time)`;
      return condition([value]);
    }
    case 'SEMVER_EQ':
    case 'SEMVER_GT':
    case 'SEMVER_GTE':
    case 'SEMVER_LT':
    case 'SEMVER_LTE': {
      const value = constraint.value ?? '';
      if (!VERSION.test(value)) return `the version "${value}" of a ${operator} constraint (Guidon takes x.y.z or x.y.z-pre)`;
      return condition([value]);
    }
    case 'REGEX': {
      if (constraint.value === undefined) return constant(false);
      return condition([constraint.value], constraint.caseInsensitive ? { case_insensitive: true } : {});
    }
    case 'IN_CIDR': {
      // Unleash's SDK ignores a range it cannot read; an address compares as itself.
      const values = cleaned(constraint.values).filter((range) => IPV4_PART.test(range) || (range.includes(':') && /^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(range)));
      if (values.length === 0) return constant(false);
      return condition(values);
    }
    default:
      return `the operator ${operator}`;
  }
}

interface Rule {
  rule_type: 'user_id' | 'conditions';
  rule_value?: string;
  conditions?: Condition[];
  rollout_percentage?: number;
}

/** What one strategy becomes: rules, or the part of everyone it serves with no condition; null: it never serves anyone. */
type StrategyMapping = { rules: Rule[]; fallback: number | null; rolloutGroup: string | null } | null;

/** A strategy's conditions (its constraints, then its segments), or why not; null: it never holds. */
function strategyConditions(strategy: Strategy, segments: Map<number, { key: string } | boolean | string>): Condition[] | null | string {
  const conditions: Condition[] = [];
  for (const constraint of strategy.constraints ?? []) {
    const mapped = mapConstraint(constraint);
    if (typeof mapped === 'string') return `its constraint on "${constraint.contextName}": ${mapped}`;
    if (mapped === false) return null;
    if (mapped !== true) conditions.push(mapped);
  }
  for (const id of strategy.segments ?? []) {
    const segment = segments.get(id);
    if (segment === undefined) return `segment ${id}: the file does not define it (send {exports, segments} with the answer of GET /api/admin/segments)`;
    if (typeof segment === 'string') return `segment ${id}: ${segment}`;
    if (segment === false) return null;
    if (segment !== true) conditions.push({ operator: 'IN_SEGMENT', values: [segment.key] });
  }
  return conditions;
}

function mapStrategy(strategy: Strategy, featureName: string, segments: Map<number, { key: string } | boolean | string>): StrategyMapping | string {
  const parameters = strategy.parameters ?? {};
  const conditions = strategyConditions(strategy, segments);
  if (typeof conditions === 'string' || conditions === null) return conditions;
  const rule = (extra: Condition[], rollout = 100): Rule => ({ rule_type: 'conditions', conditions: [...extra, ...conditions], ...(rollout !== 100 ? { rollout_percentage: rollout } : {}) });
  switch (strategy.name) {
    case 'default':
      return conditions.length === 0 ? { rules: [], fallback: 100, rolloutGroup: null } : { rules: [rule([])], fallback: null, rolloutGroup: null };
    case 'flexibleRollout':
    case 'gradualRolloutUserId': {
      const flexible = strategy.name === 'flexibleRollout';
      const stickiness = flexible ? String(parameters.stickiness ?? 'default') : 'userId';
      if (stickiness !== 'default' && stickiness !== 'userId') return `stickiness "${stickiness}" (Guidon buckets by user id)`;
      const percentage = Number(flexible ? parameters.rollout : parameters.percentage);
      // Unleash: on when percentage > 0 and the 1–100 bucket is at most it, so 33.5 % serves as 33 %.
      if (!(percentage > 0)) return null;
      const rollout = Math.min(100, Math.floor(percentage));
      const group = String(parameters.groupId ?? '');
      if (rollout < 100 && group === '') return 'a rollout without a groupId';
      // userId stickiness serves nobody without a user id, at any percentage.
      const needsId: Condition[] = stickiness === 'userId' ? [{ attribute: 'user_id', operator: 'EXISTS' }] : [];
      const rolloutGroup = rollout < 100 ? group : null;
      if (needsId.length === 0 && conditions.length === 0) return { rules: [], fallback: rollout, rolloutGroup };
      return { rules: [rule(needsId, rollout)], fallback: null, rolloutGroup };
    }
    case 'userWithId': {
      const ids = String(parameters.userIds ?? '')
        .split(/\s*,\s*/)
        .filter((id) => id !== '');
      if (ids.length === 0) return null;
      if (conditions.length === 0 && ids.every((id) => id === id.trim())) return { rules: ids.map((id) => ({ rule_type: 'user_id', rule_value: id })), fallback: null, rolloutGroup: null };
      return { rules: [rule([{ attribute: 'user_id', operator: 'IN', values: ids }])], fallback: null, rolloutGroup: null };
    }
    case 'remoteAddress': {
      const entries = String(parameters.IPs ?? '')
        .split(/\s*,\s*/)
        .filter((entry) => entry !== '');
      // IPv4 addresses and ranges are tested as ranges; anything else only equals itself.
      const ranges = entries.filter((entry) => IPV4_PART.test(entry));
      const exact = entries.filter((entry) => !IPV4_PART.test(entry));
      const rules: Rule[] = [];
      if (ranges.length > 0) rules.push(rule([{ attribute: 'remote_address', operator: 'IN_CIDR', values: ranges }]));
      if (exact.length > 0) rules.push(rule([{ attribute: 'remote_address', operator: 'IN', values: exact }]));
      return rules.length === 0 ? null : { rules, fallback: null, rolloutGroup: null };
    }
    default:
      return `strategy "${strategy.name}" (${featureName}): Guidon has default, flexibleRollout, gradualRolloutUserId, userWithId and remoteAddress`;
  }
}

type GuidonVariant = { key: string; value: unknown; weight: number };

/** Unleash variants as Guidon's, with the off variant Unleash calls "disabled"; or why not. */
function mapVariants(variants: readonly Variant[]): { variants: GuidonVariant[]; off_variant: string } | string {
  if (variants.some((variant) => (variant.overrides ?? []).length > 0)) return 'variant overrides (target them with a rule that serves a variant instead)';
  const stickiness = variants[0]?.stickiness || 'default';
  if (stickiness !== 'default' && stickiness !== 'userId') return `variant stickiness "${stickiness}" (Guidon chooses by user id)`;
  const total = variants.reduce((sum, variant) => sum + variant.weight, 0);
  if (total !== 1000) return `variant weights that sum to ${total}, not 1000`;
  const withPayload = variants.filter((variant) => variant.payload !== undefined);
  if (withPayload.length > 0 && withPayload.length < variants.length) return 'some variants have a payload and others none (a Guidon flag has a value for each)';
  const mapped: GuidonVariant[] = [];
  for (const variant of variants) {
    let value: unknown = variant.name;
    if (variant.payload) {
      const { type, value: text } = variant.payload;
      if (type === 'number') value = Number(text);
      else if (type === 'json') {
        try {
          value = JSON.parse(text);
        } catch {
          return `variant "${variant.name}": its json payload does not parse`;
        }
      } else value = text;
      if (typeof value === 'number' && !Number.isFinite(value)) return `variant "${variant.name}": the number "${text}"`;
    }
    mapped.push({ key: keyOf(variant.name), value, weight: variant.weight });
  }
  if (new Set(mapped.map((variant) => variant.key)).size < mapped.length) return 'variant names that are the same once made keys (a-z, 0-9, _ and -)';
  if (mapped.some((variant) => variant.value === null)) return 'a json payload of null';
  const off = mapped.find((variant) => variant.key === 'disabled');
  if (off) return { variants: mapped, off_variant: off.key };
  const sample = mapped[0]!.value;
  const empty = typeof sample === 'string' ? '' : typeof sample === 'number' ? 0 : typeof sample === 'boolean' ? false : Array.isArray(sample) ? [] : {};
  return { variants: [...mapped, { key: 'disabled', value: empty, weight: 0 }], off_variant: 'disabled' };
}

const sameVariants = (a: readonly Variant[] = [], b: readonly Variant[] = []) => JSON.stringify(a.map(({ name, weight, stickiness, payload }) => [name, weight, stickiness ?? null, payload ?? null])) === JSON.stringify(b.map(({ name, weight, stickiness, payload }) => [name, weight, stickiness ?? null, payload ?? null]));

/** One export per environment: the input as a list, with the segment definitions sent beside it. */
function normalizedInput(input: unknown): { exports: UnleashExport[]; definitions: SegmentDefinition[] } {
  const validateInput = inputValidator();
  if (!validateInput(input)) {
    const [error] = validateInput.errors ?? [];
    throw new InvalidDocument([{ path: error?.instancePath.slice(1).replace(/\//g, '.') ?? '', message: `Not an Unleash export (features-batch/export, several as an array, or {exports, segments}): ${error?.instancePath || 'the body'} ${error?.message ?? ''}`.trim() }]);
  }
  if (Array.isArray(input)) return { exports: input as UnleashExport[], definitions: [] };
  const value = input as { exports?: UnleashExport[]; segments?: SegmentDefinition[] | { segments: SegmentDefinition[] } };
  if (!value.exports) return { exports: [input as UnleashExport], definitions: [] };
  const definitions = Array.isArray(value.segments) ? value.segments : (value.segments?.segments ?? []);
  return { exports: value.exports, definitions };
}

/**
 * The Guidon document of an Unleash export, and what was left out. Each mapped flag is checked as
 * an import checks it; one the checks refuse (a limit, a pattern RE2 does not take) is skipped too,
 * with the check's message.
 */
export function fromUnleash(input: unknown): { document: GuidonDocument; skipped: Skipped[] } {
  const { exports, definitions } = normalizedInput(input);
  const skipped: Skipped[] = [];
  const skip = (feature: string | null, environment: string | null, what: string, reason: string) => skipped.push({ feature, environment, what, reason });

  // Segments: by id, as a Guidon segment, or a constant, or why not.
  const segmentKeys = new Map<string, number>();
  const segments = new Map<number, { key: string } | boolean | string>();
  const segmentDocuments = new Map<number, { key: string; name: string; description: string | null; conditions: Condition[] }>();
  for (const definition of [...definitions].sort((a, b) => a.id - b.id)) {
    const conditions: Condition[] = [];
    let result: { key: string } | boolean | string | null = null;
    for (const constraint of definition.constraints) {
      const mapped = mapConstraint(constraint);
      if (typeof mapped === 'string') result = `its constraint on "${constraint.contextName}": ${mapped}`;
      else if (mapped === false) result = false;
      else if (mapped !== true) conditions.push(mapped);
      if (result !== null) break;
    }
    if (result === null && conditions.length === 0) result = true;
    if (result === null && conditions.length > 30) result = 'more than 30 constraints';
    if (result === null) {
      let key = keyOf(definition.name);
      for (let n = 2; segmentKeys.has(key); n++) key = `${keyOf(definition.name, 96)}_${n}`;
      segmentKeys.set(key, definition.id);
      result = { key };
      segmentDocuments.set(definition.id, { key, name: definition.name.trim() || key, description: definition.description || null, conditions });
    }
    segments.set(definition.id, result);
  }

  type FlagEntry = GuidonDocument['flags'][number]['environments'][string];
  const flags = new Map<string, { key: string; name: string; description: string | null; environments: Record<string, FlagEntry> }>();
  const flagKeys = new Set<string>();
  const environments = new Map<string, string>();
  const usedSegments = new Set<number>();
  // Dependencies become prerequisites (docs/prerequisites.md): a parent's state, or its variants
  // (their names made keys as the parent's variants are), evaluated for the same context.
  const dependencies = new Map<string, { feature: string; enabled: boolean; variants: string[] | null }[]>();
  for (const file of exports) {
    for (const entry of file.dependencies ?? []) {
      const list = entry.dependencies.flatMap((raw) => {
        const parent = raw as { feature?: unknown; enabled?: unknown; variants?: unknown };
        if (typeof parent.feature !== 'string') return [];
        const variants = Array.isArray(parent.variants) && parent.variants.length > 0 ? parent.variants.filter((name): name is string => typeof name === 'string') : null;
        return [{ feature: parent.feature, enabled: parent.enabled !== false, variants }];
      });
      if (list.length > 0) dependencies.set(entry.feature, list);
    }
  }

  for (const file of exports) {
    const environmentName = file.featureEnvironments?.[0]?.environment;
    for (const tagged of new Set((file.featureTags ?? []).map((tag) => tag.featureName))) skip(tagged, null, 'tags', 'Guidon flags have no tags');
    if ((file.contextFields ?? []).length > 0) skip(null, environmentName ?? null, 'context field definitions', 'Guidon takes any attribute in a context: legal values and descriptions of fields are not kept');
    if (environmentName === undefined) continue;
    const environmentKey = environmentKeyOf(environmentName);
    environments.set(environmentKey, environmentName);

    for (const feature of file.features) {
      const state = file.featureEnvironments!.find((entry) => entry.featureName === feature.name && entry.environment === environmentName);
      const strategies = (file.featureStrategies ?? []).filter((strategy) => strategy.featureName === feature.name).sort((a, b) => (a.sortOrder ?? 0) - (b.sortOrder ?? 0));
      const problems: string[] = [];
      if (feature.impressionData) skip(feature.name, environmentName, 'impressionData', 'Guidon records every evaluation in its history instead');

      const active = strategies.filter((strategy) => strategy.disabled !== true);
      for (const strategy of strategies.filter((s) => s.disabled === true)) skip(feature.name, environmentName, `disabled strategy "${strategy.name}"`, 'it does not take part in evaluation');
      const rules: Rule[] = [];
      let fallback = 0;
      const groups = new Set<string>();
      let anyServes = false;
      for (const strategy of active) {
        const mapped = mapStrategy(strategy, feature.name, segments);
        if (typeof mapped === 'string') {
          problems.push(mapped);
          continue;
        }
        if (mapped === null) {
          skip(feature.name, environmentName, `strategy "${strategy.name}"`, 'it never serves anyone in Unleash (a constraint or segment that never holds, no users or addresses, 0 %)');
          continue;
        }
        anyServes = true;
        rules.push(...mapped.rules);
        if (mapped.fallback !== null) fallback = Math.max(fallback, mapped.fallback);
        if (mapped.rolloutGroup !== null) groups.add(mapped.rolloutGroup);
        for (const id of strategy.segments ?? []) if (typeof segments.get(id) === 'object') usedSegments.add(id);
      }

      // Variants: the strategies' (when every strategy has the same ones), else the environment's.
      let variants: { variants: GuidonVariant[]; off_variant: string } | null = null;
      const withVariants = active.filter((strategy) => (strategy.variants ?? []).length > 0);
      if (withVariants.length > 0) {
        if (withVariants.length < active.length || !active.every((strategy) => sameVariants(strategy.variants, active[0]!.variants))) {
          problems.push('strategies with different variants (an export does not keep which strategy serves first)');
        } else {
          const mapped = mapVariants(active[0]!.variants!);
          if (typeof mapped === 'string') problems.push(mapped);
          else variants = mapped;
          const stickiness = active[0]!.variants![0]!.stickiness || String(active[0]!.parameters?.stickiness ?? 'default');
          if (stickiness !== 'default' && stickiness !== 'userId') problems.push(`variant stickiness "${stickiness}"`);
          for (const strategy of active) groups.add(String(strategy.parameters?.groupId));
        }
      } else if ((state?.variants ?? []).length > 0) {
        const mapped = mapVariants(state!.variants!);
        if (typeof mapped === 'string') problems.push(mapped);
        else variants = mapped;
        groups.add(feature.name);
      }
      // One bucketing key serves the rollout and the variants: they must hash on one group.
      if (groups.size > 1) problems.push(`rollouts and variants that hash on different groups (${[...groups].map((group) => `"${group}"`).join(', ')}): a Guidon flag has one bucketing key`);
      const group = [...groups][0] ?? feature.name;
      if (!/^[A-Za-z0-9._~:-]{1,100}$/.test(group)) problems.push(`the group "${group}", which cannot be a bucketing key (1–100 of A-Z a-z 0-9 . _ ~ : -)`);

      if (problems.length > 0) {
        for (const problem of problems) skip(feature.name, environmentName, 'the feature', problem);
        continue;
      }
      let flag = flags.get(feature.name);
      if (!flag) {
        let key = keyOf(feature.name);
        for (let n = 2; flagKeys.has(key); n++) key = `${keyOf(feature.name, 96)}_${n}`;
        flagKeys.add(key);
        flag = { key, name: feature.name.trim().slice(0, 200) || key, description: feature.description?.slice(0, 2000) || null, environments: {} };
        flags.set(feature.name, flag);
      }
      // No strategy at all: Unleash serves everyone while the feature is on.
      const everyone = active.length === 0 || fallback === 100;
      flag.environments[environmentKey] = {
        enabled: state?.enabled === true && (anyServes || active.length === 0),
        rollout_percentage: everyone ? 0 : fallback,
        everyone_else: everyone || fallback > 0 ? 'rollout' : 'off',
        bucketing_key: group === flag.key ? null : group,
        variants: variants?.variants ?? [],
        off_variant: variants?.off_variant ?? null,
        prerequisites: [],
        rules: rules.map((rule) => ({ ...rule, rule_value: rule.rule_value ?? null, conditions: rule.conditions ?? null })),
      } as FlagEntry;
    }
  }

  /**
   * Each dependent's prerequisites, where every parent is imported in that environment; a parent
   * skipped there would leave the child always off, where Unleash may serve it: skipped too.
   * A dependency's variants are listed once for every environment (the parent's in one, and in
   * another); in each, a variant the parent does not have there never matches in Unleash, so the
   * prerequisite keeps the ones it has. When it has none of them, nothing can meet it: the child is
   * never on there, which a prerequisite cannot say (its variants are one or more of the parent's),
   * so the environment is skipped.
   */
  const linkDependencies = () => {
    for (let changed = true; changed; ) {
      changed = false;
      for (const [name, flag] of flags) {
        const parents = dependencies.get(name);
        if (parents === undefined) continue;
        for (const [environment, entry] of Object.entries(flag.environments)) {
          const missing = parents.find((parent) => flags.get(parent.feature)?.environments[environment] === undefined);
          if (missing !== undefined) {
            delete flag.environments[environment];
            skip(name, environments.get(environment) ?? environment, 'the feature', `it depends on feature "${missing.feature}", which is not imported in this environment`);
            changed = true;
            continue;
          }
          const served = (parent: (typeof parents)[number]) => {
            const has = new Set((flags.get(parent.feature)!.environments[environment]!.variants ?? []).map((variant) => variant.key));
            return parent.variants!.map((variant) => keyOf(variant)).filter((key) => has.has(key));
          };
          const unmet = parents.find((parent) => parent.variants !== null && served(parent).length === 0);
          if (unmet !== undefined) {
            delete flag.environments[environment];
            skip(name, environments.get(environment) ?? environment, 'the feature', `it depends on variants ${unmet.variants!.map((variant) => `"${variant}"`).join(', ')} of feature "${unmet.feature}", which has none of them in this environment (the feature is never on there)`);
            changed = true;
            continue;
          }
          entry.prerequisites = parents.map((parent) => ({
            flag_key: flags.get(parent.feature)!.key,
            ...(parent.enabled ? {} : { enabled: false }),
            ...(parent.variants === null ? {} : { variants: served(parent) }),
          }));
        }
      }
    }
  };

  const document = (): GuidonDocument => ({
    guidon: DOCUMENT_VERSION,
    environments: [...environments].sort().map(([key, name]) => ({ key, name: name.slice(0, 200) })),
    segments: [...usedSegments].sort((a, b) => a - b).map((id) => segmentDocuments.get(id)!),
    flags: [...flags.values()].filter((flag) => Object.keys(flag.environments).length > 0).sort((a, b) => (a.key < b.key ? -1 : 1)),
  } as GuidonDocument);

  // What the import's own checks refuse is skipped too, with their message.
  const empty = { project: { name: '', description: null }, environments: [], segments: [], flags: new Map() };
  for (let round = 0; round < 5; round++) {
    linkDependencies();
    const current = document();
    try {
      checkDocument(current, empty, 'merge');
      return { document: current, skipped };
    } catch (error) {
      if (!(error instanceof InvalidDocument)) throw error;
      for (const problem of error.problems) {
        const flag = /^flags\[(\d+)\]\.environments\.([^.[]+)/.exec(problem.path);
        const segment = /^segments\[(\d+)\]/.exec(problem.path);
        if (flag) {
          const entry = current.flags[Number(flag[1])]!;
          const original = [...flags.entries()].find(([, value]) => value.key === entry.key)!;
          delete original[1].environments[flag[2]!];
          skip(original[0], environments.get(flag[2]!) ?? flag[2]!, 'the feature', problem.message);
        } else if (segment) {
          const key = current.segments![Number(segment[1])]!.key;
          const id = segmentKeys.get(key)!;
          usedSegments.delete(id);
          skip(null, null, `segment ${id}`, problem.message);
          // Its users go with it: their rules would name a segment that is not there.
          for (const [name, value] of flags) {
            for (const [environment, entry] of Object.entries(value.environments)) {
              if (JSON.stringify(entry.rules ?? []).includes(`"IN_SEGMENT","values":["${key}"]`)) {
                delete value.environments[environment];
                skip(name, environments.get(environment) ?? environment, 'the feature', `it uses segment ${id}, which was skipped`);
              }
            }
          }
        } else throw error;
      }
    }
  }
  throw new Error('the Unleash mapping did not settle');
}

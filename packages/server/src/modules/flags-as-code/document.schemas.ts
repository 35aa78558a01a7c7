/**
 * The flags-as-code document (docs/flags-as-code.md): its TypeBox schema, built from the API's own
 * field schemas (flags, rules, variants, conditions, segments, environments), is the one source of
 * both the JSON Schema served at /schemas/guidon-export-1.json and the check of every import.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { CONDITION_LIMITS, OPERATORS, VARIANT_LIMITS } from '@guidon/engine';
import { Description, Name, Uuid } from '../../http/schemas.js';
import { EnvironmentKey } from '../environments/environments.schemas.js';
import { BucketingKey, CreateRuleBody, EveryoneElse, FlagKey, OffVariant, RolloutPercentage, VariantBody } from '../flags/flags.schemas.js';
import { ConditionBody, CreateSegmentBody } from '../segments/segments.schemas.js';

/** The document format's version: `guidon: 1`. */
export const DOCUMENT_VERSION = 1;
export const SCHEMA_PATH = '/schemas/guidon-export-1.json';

/** A closed object: a misspelt field is a problem, not a field silently left at its default. */
const closed = <T extends Record<string, TSchema>>(properties: T, options: object = {}) => Type.Object(properties, { additionalProperties: false, ...options });

const DocumentCondition = closed({ ...ConditionBody.properties, operator: Type.Enum([...OPERATORS]) });
const DocumentConditions = Type.Array(DocumentCondition, { minItems: 1, maxItems: CONDITION_LIMITS.conditionsPerRule });

const DocumentRule = closed({
  ...CreateRuleBody.properties,
  conditions: Type.Optional(Type.Union([DocumentConditions, Type.Null()], { description: 'for rule_type conditions: all must hold' })),
});

const Prerequisite = closed({
  flag_key: FlagKey,
  enabled: Type.Optional(Type.Boolean({ description: 'the state the other flag must answer (default true)' })),
  variants: Type.Optional(Type.Array(Type.String(), { minItems: 1, description: 'with enabled true: one of these variants of the other flag' })),
});

/** A flag in one environment: the flag API's fields, each with the API's default when left out. */
const FlagState = closed(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    enabled: Type.Optional(Type.Boolean()),
    rollout_percentage: Type.Optional(RolloutPercentage),
    everyone_else: Type.Optional(EveryoneElse),
    bucketing_key: Type.Optional(BucketingKey),
    variants: Type.Optional(Type.Array(closed(VariantBody.properties), { maxItems: VARIANT_LIMITS.variants })),
    off_variant: Type.Optional(OffVariant),
    prerequisites: Type.Optional(Type.Array(Prerequisite, { maxItems: 10 })),
    rules: Type.Optional(Type.Array(DocumentRule, { description: 'in evaluation order: highest priority first' })),
  },
  { description: "name and description only where they differ from the flag's" },
);

const DocumentFlag = closed({
  key: FlagKey,
  name: Name,
  description: Type.Optional(Description),
  environments: Type.Record(Type.String(), FlagState, { description: 'by environment key; an environment without the flag is absent' }),
});

const DocumentEnvironment = closed({
  key: EnvironmentKey,
  name: Name,
  approvals_required: Type.Optional(Type.Integer({ minimum: 0, maximum: 5, description: "approvals a change needs there; set by an owner, never by an import" })),
});

const DocumentSegment = closed({ ...CreateSegmentBody.properties, conditions: DocumentConditions });

export const GuidonDocument = closed(
  {
    guidon: Type.Literal(DOCUMENT_VERSION),
    project: Type.Optional(closed({ name: Type.String(), description: Type.Union([Type.String(), Type.Null()]) }, { description: 'informational: an import never changes the project' })),
    environments: Type.Array(DocumentEnvironment, { maxItems: 100 }),
    segments: Type.Optional(Type.Array(DocumentSegment)),
    flags: Type.Array(DocumentFlag),
  },
  { title: 'Guidon export, format 1', description: "A Guidon project's environments, segments and flags (docs/flags-as-code.md)" },
);
export type GuidonDocument = Static<typeof GuidonDocument>;

/** The JSON Schema served at SCHEMA_PATH and used to check imports: the document's schema as JSON. */
export const documentJsonSchema: Readonly<Record<string, unknown>> = Object.freeze({
  $schema: 'http://json-schema.org/draft-07/schema#',
  ...(JSON.parse(JSON.stringify(GuidonDocument)) as Record<string, unknown>),
});

const PlanItem = Type.Object({
  resource: Type.Union([Type.Literal('environment'), Type.Literal('segment'), Type.Literal('flag')]),
  key: Type.String(),
  environment: Type.Union([Type.String(), Type.Null()], { description: "the environment's key, for a flag" }),
  fields: Type.Array(Type.String(), { description: 'for an update: the fields that change (rules: any of its rules)' }),
});

const planFields = {
  mode: Type.Union([Type.Literal('merge'), Type.Literal('replace')]),
  dry_run: Type.Boolean(),
  import_id: Type.Union([Uuid, Type.Null()], { description: "the id every audit event of the applied import carries; null for a dry run" }),
  create: Type.Array(PlanItem),
  update: Type.Array(PlanItem),
  delete: Type.Array(PlanItem),
  unchanged: Type.Integer({ description: 'environments, segments and flags (one per environment) the import leaves as they are' }),
  change_requests: Type.Array(
    Type.Object({
      environment: Type.String({ description: "the environment's key" }),
      id: Type.Union([Uuid, Type.Null()], { description: 'the change request made; null in a dry run (one would be made)' }),
    }),
    { description: "the environments that need approved change requests (approvals_required ≥ 1): the plan's changes to their flags are not applied but made into one change request each, to review and apply (docs/change-management.md)" },
  ),
};

export const ImportPlan = Type.Object(planFields, { $id: 'ImportPlan' });

const Skipped = Type.Object({
  feature: Type.Union([Type.String(), Type.Null()], { description: "the Unleash feature's name; null for something not of one feature (a segment)" }),
  environment: Type.Union([Type.String(), Type.Null()]),
  what: Type.String({ description: 'what was left out, e.g. strategy "userWithId" or segment 3' }),
  reason: Type.String(),
});

export const UnleashImportAnswer = Type.Object(
  {
    ...planFields,
    skipped: Type.Array(Skipped, { description: 'everything of the Unleash export that could not be mapped exactly, and why: none of it was imported' }),
    document: Type.Unknown({ description: 'the Guidon document the Unleash export maps to (what was imported, or would be)' }),
  },
  { $id: 'UnleashImportAnswer' },
);

/** A 400 of an import: every problem of the document, each with where it is. */
export const DocumentProblems = Type.Object(
  {
    statusCode: Type.Integer(),
    error: Type.String(),
    message: Type.String(),
    problems: Type.Optional(Type.Array(Type.Object({ path: Type.String({ description: 'e.g. flags[2].environments.production.rules[0].conditions[1].operator' }), message: Type.String() }))),
  },
  { $id: 'DocumentProblems' },
);

export const ImportQuery = Type.Object({
  mode: Type.Optional(Type.Union([Type.Literal('merge'), Type.Literal('replace')], { description: 'merge (default): create and update; replace: also delete the flags and segments the document does not name' })),
  dry_run: Type.Optional(Type.Boolean({ description: 'true (default): answer the plan and change nothing' })),
});

export const ExportQuery = Type.Object({
  format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('yaml')])),
});

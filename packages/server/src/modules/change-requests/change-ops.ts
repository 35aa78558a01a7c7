/**
 * What a change request may hold (docs/change-management.md): one entry per `op`, with the fields
 * it takes beside `op`, the flag whose state it builds on, and how it runs. Each runs the very
 * write its direct route runs (flags/flag-writes.ts, flags/rule-writes.ts,
 * schedules/schedule-writes.ts), so a request checks and does exactly what the routes would.
 * A new kind of change is one more entry here.
 */
import { Type, type Static, type TObject, type TProperties } from 'typebox';
import type { Db } from '../../db/database.js';
import { Uuid } from '../../http/schemas.js';
import type { Actor } from '../changes/changes.schemas.js';
import type { RecordChange } from '../changes/project-writes.js';
import type { EnvironmentScope } from '../environments/environments.repository.js';
import { createFlagWrite, deleteFlagWrite, toggleFlagWrite, updateFlagWrite } from '../flags/flag-writes.js';
import { CreateFlagBody, CreateRuleBody, UpdateFlagBody, UpdateRuleBody } from '../flags/flags.schemas.js';
import type { PrerequisiteBatch } from '../flags/prerequisites.js';
import { createRuleWrite, deleteRuleWrite, updateRuleWrite } from '../flags/rule-writes.js';
import { cancelScheduleWrite, createScheduleWrite } from '../schedules/schedule-writes.js';
import { createReleaseWrite } from '../releases/release-writes.js';
import { CreateReleaseBody } from '../releases/releases.schemas.js';
import { At, Note } from '../schedules/schedules.schemas.js';

/** Where and for whom a change runs: the request's environment, its author, the request. */
export interface OpContext {
  env: EnvironmentScope;
  author: Actor;
  /** The change request that runs it, or null (an import). */
  changeRequestId: string | null;
  /** An import's: the prerequisite checks of its flag writes run once at its end (flags/prerequisites.ts). */
  batch?: PrerequisiteBatch;
}

interface ChangeOp<S extends TObject> {
  fields: S;
  /** The flag whose current state the change builds on (its revision is recorded), or null. */
  flagOf(change: Static<S>): string | null;
  run(trx: Db, record: RecordChange, context: OpContext, change: Static<S>): Promise<unknown>;
}

const op = <P extends TProperties>(fields: P, definition: Omit<ChangeOp<TObject<P>>, 'fields'>): ChangeOp<TObject<P>> => ({ fields: Type.Object(fields), ...definition });
const onFlag = (context: OpContext, flagId: string) => ({ ...context.env, flagId });

export const CHANGE_OPS = {
  // `rules`: the new flag's rules, created in this order (a rule.create needs a flag that exists).
  'flag.create': op({ flag: CreateFlagBody, rules: Type.Optional(Type.Array(CreateRuleBody, { maxItems: 100, description: "the new flag's rules, created in this order" })) }, {
    flagOf: () => null,
    run: async (trx, record, context, change) => {
      const created = await createFlagWrite(trx, record, context.env, change.flag, context.batch);
      for (const rule of change.rules ?? []) await createRuleWrite(trx, record, onFlag(context, created.id), rule);
      return created;
    },
  }),
  'flag.update': op({ flag_id: Uuid, set: UpdateFlagBody }, {
    flagOf: (change) => change.flag_id,
    run: (trx, record, context, change) => updateFlagWrite(trx, record, onFlag(context, change.flag_id), change.set, context.batch),
  }),
  'flag.toggle': op({ flag_id: Uuid }, {
    flagOf: (change) => change.flag_id,
    run: (trx, record, context, change) => toggleFlagWrite(trx, record, onFlag(context, change.flag_id)),
  }),
  'flag.delete': op({ flag_id: Uuid }, {
    flagOf: (change) => change.flag_id,
    run: (trx, record, context, change) => deleteFlagWrite(trx, record, onFlag(context, change.flag_id), context.batch),
  }),
  'rule.create': op({ flag_id: Uuid, rule: CreateRuleBody }, {
    flagOf: (change) => change.flag_id,
    run: (trx, record, context, change) => createRuleWrite(trx, record, onFlag(context, change.flag_id), change.rule),
  }),
  'rule.update': op({ flag_id: Uuid, rule_id: Uuid, set: UpdateRuleBody }, {
    flagOf: (change) => change.flag_id,
    run: (trx, record, context, change) => updateRuleWrite(trx, record, { ...onFlag(context, change.flag_id), ruleId: change.rule_id }, change.set),
  }),
  'rule.delete': op({ flag_id: Uuid, rule_id: Uuid }, {
    flagOf: (change) => change.flag_id,
    run: (trx, record, context, change) => deleteRuleWrite(trx, record, { ...onFlag(context, change.flag_id), ruleId: change.rule_id }),
  }),
  'schedule.create': op({ flag_id: Uuid, at: At, change: UpdateFlagBody, note: Type.Optional(Note) }, {
    flagOf: (change) => change.flag_id,
    run: (trx, record, context, change) => createScheduleWrite(trx, record, onFlag(context, change.flag_id), change, context.author, context.changeRequestId),
  }),
  // A guarded release (docs/releases.md): once approved, its steps and its rollback need no further approval.
  'release.create': op({ flag_id: Uuid, release: CreateReleaseBody }, {
    flagOf: (change) => change.flag_id,
    run: (trx, record, context, change) => createReleaseWrite(trx, record, onFlag(context, change.flag_id), change.release, context.author, context.changeRequestId),
  }),
  'schedule.cancel': op({ schedule_id: Uuid }, {
    flagOf: () => null,
    run: (trx, record, context, change) => cancelScheduleWrite(trx, record, { projectId: context.env.projectId, envId: context.env.envId, scheduleId: change.schedule_id }),
  }),
};

export type ChangeKind = keyof typeof CHANGE_OPS;
type Fields<K extends ChangeKind> = Static<(typeof CHANGE_OPS)[K]['fields']>;
/** One change of a request: `{op, ...its fields}`. */
export type RequestedChange = { [K in ChangeKind]: { op: K } & Fields<K> }[ChangeKind];

/**
 * The schema of one change: each op's fields, chosen by `op` (a discriminator, so that a mistake
 * is reported against the fields of the op named, at its index).
 */
export const ChangeSchema = Type.Unsafe<RequestedChange>({
  type: 'object',
  description: 'a change: {op, ...}; op one of ' + Object.keys(CHANGE_OPS).join(', '),
  discriminator: { propertyName: 'op' },
  required: ['op'],
  oneOf: Object.entries(CHANGE_OPS).map(([name, definition]) => Type.Object({ op: Type.Literal(name), ...definition.fields.properties }, { title: name })),
});

/** The change's entry, typed for its fields. */
const entryOf = (change: RequestedChange) => CHANGE_OPS[change.op] as unknown as ChangeOp<TObject>;

export const flagOf = (change: RequestedChange): string | null => entryOf(change).flagOf(change);
export const runChange = (trx: Db, record: RecordChange, context: OpContext, change: RequestedChange): Promise<unknown> => entryOf(change).run(trx, record, context, change);

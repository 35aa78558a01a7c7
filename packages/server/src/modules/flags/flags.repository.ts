import { sql, type Selectable } from 'kysely';
import type { Db } from '../../db/database.js';
import { conflictOnDuplicate, notFoundIfParentGone } from '../../db/errors.js';
import type { FlagsTable } from '../../db/schema.js';
import { newId, nowIso, toBool, toIso } from '../../db/values.js';
import { NotFound } from '../../errors.js';
import type { EnvironmentScope } from '../environments/environments.repository.js';
import { storedVariants, toVariants, type Variant } from './variants.js';
import { storedPrerequisites, toPrerequisites, type Prerequisite } from './prerequisites.js';

const COLUMNS = [
  'flags.id',
  'flags.project_id',
  'flags.environment_id',
  'flags.name',
  'flags.key',
  'flags.description',
  'flags.enabled',
  'flags.rollout_percentage',
  'flags.everyone_else',
  'flags.variants',
  'flags.off_variant',
  'flags.bucketing_key',
  'flags.prerequisites',
  'flags.created_at',
  'flags.updated_at',
] as const;

export interface FlagFields {
  name: string;
  key: string;
  description: string | null;
  enabled: boolean;
  rollout_percentage: number;
  everyone_else: EveryoneElse;
  /** docs/variants.md: [] for none (stored as null). */
  variants: Variant[];
  off_variant: string | null;
  /** Hashed instead of the key (docs/flags-as-code.md); null: the key. */
  bucketing_key: string | null;
  /** docs/prerequisites.md: [] for none (stored as null). */
  prerequisites: Prerequisite[];
}

export type EveryoneElse = 'rollout' | 'off';

export interface FlagScope extends EnvironmentScope {
  flagId: string;
}

export function toFlag(row: Omit<Selectable<FlagsTable>, 'revision'>) {
  return {
    id: row.id,
    project_id: row.project_id,
    environment_id: row.environment_id,
    name: row.name,
    key: row.key,
    description: row.description,
    enabled: toBool(row.enabled),
    rollout_percentage: row.rollout_percentage,
    everyone_else: row.everyone_else as EveryoneElse,
    variants: toVariants(row.variants),
    off_variant: row.off_variant,
    bucketing_key: row.bucketing_key,
    prerequisites: toPrerequisites(row.prerequisites),
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}

/** The columns of flag fields as stored. */
function stored(fields: FlagFields): Omit<FlagFields, 'variants' | 'prerequisites'> & { variants: string | null; prerequisites: string | null };
function stored(fields: Partial<FlagFields>): Omit<Partial<FlagFields>, 'variants' | 'prerequisites'> & { variants?: string | null; prerequisites?: string | null };
function stored(fields: Partial<FlagFields>) {
  const { variants, prerequisites, ...rest } = fields;
  return {
    ...rest,
    ...(variants === undefined ? {} : { variants: storedVariants(variants) }),
    ...(prerequisites === undefined ? {} : { prerequisites: storedPrerequisites(prerequisites) }),
  };
}

const duplicateKey = (key: string) => `A flag with key "${key}" already exists in this environment`;

/** The flag, if it is in the environment, of the project; else NotFound. */
export async function requireFlag(db: Db, scope: FlagScope) {
  const row = await db
    .selectFrom('flags')
    .select(COLUMNS)
    .where('flags.id', '=', scope.flagId)
    .where('flags.environment_id', '=', scope.envId)
    .where('flags.project_id', '=', scope.projectId)
    .executeTakeFirst();
  if (!row) throw new NotFound('Flag not found');
  return toFlag(row);
}

export async function listFlags(db: Db, envId: string) {
  const rows = await db.selectFrom('flags').select(COLUMNS).where('environment_id', '=', envId).orderBy('created_at').orderBy('id').execute();
  return rows.map(toFlag);
}

export async function createFlag(db: Db, env: { id: string; project_id: string }, fields: FlagFields) {
  const now = nowIso();
  const flag = { id: newId(), project_id: env.project_id, environment_id: env.id, ...stored(fields), created_at: now, updated_at: now };
  await notFoundIfParentGone(conflictOnDuplicate(db.insertInto('flags').values(flag).execute(), duplicateKey(fields.key)), 'Environment not found');
  return toFlag(flag);
}

export async function updateFlag(db: Db, flagId: string, changes: Partial<FlagFields>) {
  const update = db.updateTable('flags').set({ ...stored(changes), updated_at: nowIso() }).where('id', '=', flagId).returning(COLUMNS).executeTakeFirst();
  const row = await conflictOnDuplicate(update, duplicateKey(changes.key ?? ''));
  if (!row) throw new NotFound('Flag not found');
  return toFlag(row);
}

export async function toggleFlag(db: Db, flagId: string) {
  const row = await db
    .updateTable('flags')
    .set({ enabled: sql<boolean>`not enabled`, updated_at: nowIso() })
    .where('id', '=', flagId)
    .returning(COLUMNS)
    .executeTakeFirst();
  if (!row) throw new NotFound('Flag not found');
  return toFlag(row);
}

/** Its rules go with it; its evaluation history stays (no foreign key from evaluations to flags). */
export async function deleteFlag(db: Db, flagId: string): Promise<void> {
  await db.deleteFrom('flags').where('id', '=', flagId).execute();
}

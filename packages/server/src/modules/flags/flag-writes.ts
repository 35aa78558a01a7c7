/**
 * The writes to a flag, each with its checks, as the routes run them inside ProjectWrites.apply.
 * Scheduled changes and change requests (docs/change-management.md) run the same functions, at
 * save (checked, then rolled back) and when applied: one set of rules for every way in.
 */
import type { Static } from 'typebox';
import type { Db } from '../../db/database.js';
import { onlyProvided } from '../../db/values.js';
import { Invalid } from '../../errors.js';
import type { AuditAction } from '../changes/changes.schemas.js';
import type { RecordChange } from '../changes/project-writes.js';
import { requireEnvironment, type EnvironmentScope } from '../environments/environments.repository.js';
import { createFlag, deleteFlag, requireFlag, toggleFlag, updateFlag, type FlagScope } from './flags.repository.js';
import type { CreateFlagBody, UpdateFlagBody } from './flags.schemas.js';
import { listRules } from './rules.repository.js';
import { checkOffVariant, checkVariants, type Variant } from './variants.js';
import { checkPrerequisites, normalizedPrerequisites, refuseIfNamed, type PrerequisiteBatch } from './prerequisites.js';

export type Flag = Awaited<ReturnType<typeof requireFlag>>;
export type FlagCreate = Static<typeof CreateFlagBody>;
export type FlagPut = Static<typeof UpdateFlagBody>;

/** The audit record of a change to a flag. */
export const flagChange = (action: AuditAction, before: Flag | null, after: Flag | null) => {
  const flag = (after ?? before)!;
  return { action, resource_type: 'flag' as const, resource_id: flag.id, resource_key: flag.key, environment_id: flag.environment_id, before, after };
};

/**
 * A PUT's variants and off_variant as they will be (docs/variants.md "API"), or Invalid. Left
 * out, off_variant stays, and clears with the variants ([]); the result must still name every
 * variant the flag's rules name (clearing the variants included: the rules are not changed
 * behind the user's back).
 */
async function checkedVariantChange(trx: Db, before: Flag, sentVariants: Variant[] | undefined, sentOff: string | null | undefined) {
  const variants = sentVariants ?? before.variants;
  const offVariant = sentOff !== undefined ? sentOff : variants.length === 0 ? null : before.off_variant;
  if (sentOff === undefined && offVariant !== null && !variants.some((variant) => variant.key === offVariant)) {
    throw new Invalid(`off_variant "${offVariant}" is not one of the new variants: send off_variant with them`);
  }
  const off_variant = checkOffVariant(variants, offVariant);
  if (sentVariants !== undefined) {
    const keys = new Set(variants.map((variant) => variant.key));
    const orphan = (await listRules(trx, [before.id])).find((rule) => rule.variant !== null && !keys.has(rule.variant));
    if (orphan) {
      const what = variants.length === 0 ? 'the flag would have no variants' : 'the new variants do not have it';
      throw new Invalid(`Rule ${orphan.id} (${orphan.rule_type}, priority ${orphan.priority}) serves variant "${orphan.variant}", but ${what}: change or clear the rule's variant first`);
    }
  }
  return { variants, off_variant };
}

/** `batch`: an import's, whose prerequisite checks run once at its end (prerequisites.ts). */
export async function createFlagWrite(trx: Db, record: RecordChange, scope: EnvironmentScope, body: FlagCreate, batch?: PrerequisiteBatch) {
  const { name, key, description = null, enabled = false, rollout_percentage = 0, everyone_else = 'rollout' } = body;
  const bucketing_key = body.bucketing_key ?? null;
  const variants = checkVariants(body.variants ?? []);
  const off_variant = checkOffVariant(variants, body.off_variant ?? null);
  const prerequisites = normalizedPrerequisites(body.prerequisites ?? []);
  const environment = await requireEnvironment(trx, scope);
  await checkPrerequisites(trx, environment.id, { id: null, key, variants, prerequisites }, batch);
  const created = await createFlag(trx, environment, { name, key, description, enabled, rollout_percentage, everyone_else, variants, off_variant, bucketing_key, prerequisites });
  record(flagChange('flag.created', null, created));
  return created;
}

/** A PUT of the flag: only the fields sent change. */
export async function updateFlagWrite(trx: Db, record: RecordChange, scope: FlagScope, body: FlagPut, batch?: PrerequisiteBatch) {
  const { name, key, description, enabled, rollout_percentage, everyone_else } = body;
  const bucketing_key = body.bucketing_key;
  const sentVariants = body.variants === undefined ? undefined : checkVariants(body.variants);
  const before = await requireFlag(trx, scope);
  const variantFields = sentVariants === undefined && body.off_variant === undefined ? {} : await checkedVariantChange(trx, before, sentVariants, body.off_variant);
  const prerequisites = body.prerequisites === undefined ? undefined : normalizedPrerequisites(body.prerequisites);
  if (key !== undefined && key !== before.key) await refuseIfNamed(trx, before.environment_id, before.key, 're-keyed', batch);
  if (prerequisites !== undefined || sentVariants !== undefined || (key !== undefined && key !== before.key)) {
    await checkPrerequisites(trx, before.environment_id, { id: before.id, key: key ?? before.key, variants: 'variants' in variantFields ? (variantFields.variants as Variant[]) : before.variants, prerequisites: prerequisites ?? before.prerequisites }, batch);
  }
  const after = await updateFlag(trx, before.id, onlyProvided({ name, key, description, enabled, rollout_percentage, everyone_else, bucketing_key, prerequisites, ...variantFields }));
  // Switching it on or off is a toggle however it is sent (the dashboard's switch sets the
  // state with PUT): a webhook for flag.toggled hears every flip.
  const sameVariants = JSON.stringify([before.variants, before.off_variant, before.prerequisites]) === JSON.stringify([after.variants, after.off_variant, after.prerequisites]);
  const onlySwitched = before.enabled !== after.enabled && sameVariants && [name, key, description, rollout_percentage, everyone_else, bucketing_key].every((value, i) => value === undefined || value === [before.name, before.key, before.description, before.rollout_percentage, before.everyone_else, before.bucketing_key][i]);
  record(flagChange(onlySwitched ? 'flag.toggled' : 'flag.updated', before, after));
  return after;
}

export async function toggleFlagWrite(trx: Db, record: RecordChange, scope: FlagScope) {
  const before = await requireFlag(trx, scope);
  const after = await toggleFlag(trx, before.id);
  record(flagChange('flag.toggled', before, after));
  return after;
}

export async function deleteFlagWrite(trx: Db, record: RecordChange, scope: FlagScope, batch?: PrerequisiteBatch): Promise<void> {
  const flag = await requireFlag(trx, scope);
  await refuseIfNamed(trx, flag.environment_id, flag.key, 'deleted', batch);
  await deleteFlag(trx, flag.id);
  record(flagChange('flag.deleted', flag, null));
}

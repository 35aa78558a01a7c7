import { Type } from 'typebox';
import type { AuditAction } from '../changes/changes.schemas.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { onlyProvided } from '../../db/values.js';
import { Invalid } from '../../errors.js';
import { errorResponses, EnvironmentParams } from '../../http/schemas.js';
import { requireEnvironment } from '../environments/environments.repository.js';
import { createFlag, deleteFlag, listFlags, requireFlag, toggleFlag, updateFlag } from './flags.repository.js';
import { CreateFlagBody, FlagParams, UpdateFlagBody } from './flags.schemas.js';
import { listRules } from './rules.repository.js';
import { checkOffVariant, checkVariants, type Variant } from './variants.js';
import { checkBucketingKey } from './bucketing.js';

type FlagRequest = { params: { project_id: string; env_id: string; flag_id: string } };
export const flagScopeOf = (request: FlagRequest) => ({
  projectId: request.params.project_id,
  envId: request.params.env_id,
  flagId: request.params.flag_id,
});

type Flag = Awaited<ReturnType<typeof requireFlag>>;

/**
 * A PUT's variants and off_variant as they will be (docs/variants.md), or Invalid. Left out,
 * off_variant stays, and clears with the variants ([]); the result must still name every
 * variant the flag's rules name (clearing the variants included: the rules are not changed
 * behind the user's back, docs/variants.md "API").
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

/** The audit record of a change to a flag. */
export const flagChange = (action: AuditAction, before: Flag | null, after: Flag | null) => {
  const flag = (after ?? before)!;
  return { action, resource_type: 'flag' as const, resource_id: flag.id, resource_key: flag.key, environment_id: flag.environment_id, before, after };
};

/** /api/projects/{project_id}/environments/{env_id}/flags */
export const flagRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['flags'];
  const FlagRef = Type.Ref('Flag');
  const base = '/projects/:project_id/environments/:env_id/flags';
  const environmentOf = (trx: typeof db, request: { params: { project_id: string; env_id: string } }) =>
    requireEnvironment(trx, { projectId: request.params.project_id, envId: request.params.env_id });

  app.post(base, {
    config: { role: 'editor' },
    schema: { tags, params: EnvironmentParams, body: CreateFlagBody, response: { 201: FlagRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request, reply) => {
    const { name, key, description = null, enabled = false, rollout_percentage = 0, everyone_else = 'rollout' } = request.body;
    const bucketing_key = checkBucketingKey(request.body.bucketing_key ?? null);
    const variants = checkVariants(request.body.variants ?? []);
    const off_variant = checkOffVariant(variants, request.body.off_variant ?? null);
    const flag = await writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const created = await createFlag(trx, await environmentOf(trx, request), { name, key, description, enabled, rollout_percentage, everyone_else, variants, off_variant, bucketing_key });
      record(flagChange('flag.created', null, created));
      return created;
    });
    return reply.code(201).send(flag);
  });

  app.get(base, {
    config: { role: 'viewer' },
    schema: { tags, params: EnvironmentParams, response: { 200: Type.Array(FlagRef), ...errorResponses(401, 404) } },
  }, async (request) => listFlags(db, (await environmentOf(db, request)).id));

  app.get(`${base}/:flag_id`, {
    config: { role: 'viewer' },
    schema: { tags, params: FlagParams, response: { 200: FlagRef, ...errorResponses(401, 404) } },
  }, async (request) => requireFlag(db, flagScopeOf(request)));

  app.put(`${base}/:flag_id`, {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, body: UpdateFlagBody, response: { 200: FlagRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request) => {
    const { name, key, description, enabled, rollout_percentage, everyone_else } = request.body;
    const bucketing_key = checkBucketingKey(request.body.bucketing_key);
    const sentVariants = request.body.variants === undefined ? undefined : checkVariants(request.body.variants);
    return writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const before = await requireFlag(trx, flagScopeOf(request));
      const variantFields = sentVariants === undefined && request.body.off_variant === undefined ? {} : await checkedVariantChange(trx, before, sentVariants, request.body.off_variant);
      const after = await updateFlag(trx, before.id, onlyProvided({ name, key, description, enabled, rollout_percentage, everyone_else, bucketing_key, ...variantFields }));
      // Switching it on or off is a toggle however it is sent (the dashboard's switch sets the
      // state with PUT): a webhook for flag.toggled hears every flip.
      const sameVariants = JSON.stringify([before.variants, before.off_variant]) === JSON.stringify([after.variants, after.off_variant]);
      const onlySwitched = before.enabled !== after.enabled && sameVariants && [name, key, description, rollout_percentage, everyone_else, bucketing_key].every((value, i) => value === undefined || value === [before.name, before.key, before.description, before.rollout_percentage, before.everyone_else, before.bucketing_key][i]);
      record(flagChange(onlySwitched ? 'flag.toggled' : 'flag.updated', before, after));
      return after;
    });
  });

  app.post(`${base}/:flag_id/toggle`, {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, response: { 200: FlagRef, ...errorResponses(401, 403, 404) } },
  }, async (request) =>
    writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const before = await requireFlag(trx, flagScopeOf(request));
      const after = await toggleFlag(trx, before.id);
      record(flagChange('flag.toggled', before, after));
      return after;
    }),
  );

  app.delete(`${base}/:flag_id`, {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404) } },
  }, async (request, reply) => {
    await writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const flag = await requireFlag(trx, flagScopeOf(request));
      await deleteFlag(trx, flag.id);
      record(flagChange('flag.deleted', flag, null));
    });
    return reply.code(204).send(null);
  });
};

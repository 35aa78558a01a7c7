import type { Selectable } from 'kysely';
import type { Condition, RuleType } from '@guidon/engine';
import type { Db } from '../../db/database.js';
import type { RulesTable } from '../../db/schema.js';
import { newId, nowIso, toBool, toIso } from '../../db/values.js';
import { NotFound } from '../../errors.js';
import { notFoundIfParentGone } from '../../db/errors.js';
import { toConditions } from '../segments/segments.repository.js';

const COLUMNS = ['id', 'flag_id', 'rule_type', 'rule_value', 'conditions', 'enabled', 'priority', 'rollout_percentage', 'serve', 'variant', 'created_at', 'updated_at'] as const;

export interface RuleFields {
  rule_type: RuleType;
  /** '' for a conditions rule. */
  rule_value: string;
  conditions: Condition[] | null;
  enabled: boolean;
  priority: number;
  rollout_percentage: number;
  serve: boolean;
  /** A key of the flag's variants (docs/variants.md), else null. */
  variant: string | null;
}

type RuleRow = Pick<Selectable<RulesTable>, (typeof COLUMNS)[number]>;

export function toRule(row: RuleRow) {
  const conditions = row.rule_type === 'conditions' ? toConditions(row.conditions) : null;
  return {
    id: row.id,
    flag_id: row.flag_id,
    rule_type: row.rule_type as RuleType,
    rule_value: row.rule_type === 'conditions' ? null : row.rule_value,
    conditions,
    enabled: toBool(row.enabled),
    priority: row.priority,
    rollout_percentage: row.rollout_percentage,
    serve: toBool(row.serve),
    variant: row.variant,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}

/** The columns of rule fields as stored. */
const stored = <T extends Partial<RuleFields>>(fields: T) => {
  const { conditions, ...rest } = fields;
  return conditions === undefined ? rest : { ...rest, conditions: conditions === null ? null : JSON.stringify(conditions) };
};

/** Evaluation order: highest priority first, ties oldest first. */
export async function listRules(db: Db, flagIds: readonly string[]) {
  if (flagIds.length === 0) return [];
  const rows = await db
    .selectFrom('rules')
    .select(COLUMNS)
    .where('flag_id', 'in', flagIds)
    .orderBy('priority', 'desc')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(toRule);
}

export async function requireRule(db: Db, flagId: string, ruleId: string) {
  const row = await db.selectFrom('rules').select(COLUMNS).where('id', '=', ruleId).where('flag_id', '=', flagId).executeTakeFirst();
  if (!row) throw new NotFound('Rule not found');
  return toRule(row);
}

export async function createRule(db: Db, flagId: string, fields: RuleFields) {
  const now = nowIso();
  const rule = { id: newId(), flag_id: flagId, ...stored(fields), created_at: now, updated_at: now };
  await notFoundIfParentGone(db.insertInto('rules').values(rule).execute(), 'Flag not found');
  return toRule({ ...rule, conditions: fields.conditions });
}

export async function updateRule(db: Db, ruleId: string, changes: Partial<RuleFields>) {
  const row = await db.updateTable('rules').set({ ...stored(changes), updated_at: nowIso() }).where('id', '=', ruleId).returning(COLUMNS).executeTakeFirst();
  if (!row) throw new NotFound('Rule not found');
  return toRule(row);
}

export async function deleteRule(db: Db, ruleId: string): Promise<void> {
  await db.deleteFrom('rules').where('id', '=', ruleId).execute();
}

import type { Db } from '../../db/database.js';
import { conflictOnDuplicate, notFoundIfParentGone } from '../../db/errors.js';
import { newId, nowIso, toIso } from '../../db/values.js';
import { NotFound } from '../../errors.js';

const COLUMNS = ['environments.id', 'environments.project_id', 'environments.name', 'environments.key', 'environments.approvals_required', 'environments.created_at'] as const;

function toEnvironment(row: { id: string; project_id: string; name: string; key: string; approvals_required: number; created_at: string | Date }) {
  return { id: row.id, project_id: row.project_id, name: row.name, key: row.key, approvals_required: row.approvals_required, created_at: toIso(row.created_at) };
}

export interface EnvironmentScope {
  projectId: string;
  envId: string;
}

/** The environment, if it is in the project; else NotFound. */
export async function requireEnvironment(db: Db, scope: EnvironmentScope) {
  const row = await db
    .selectFrom('environments')
    .select(COLUMNS)
    .where('environments.id', '=', scope.envId)
    .where('environments.project_id', '=', scope.projectId)
    .executeTakeFirst();
  if (!row) throw new NotFound('Environment not found');
  return toEnvironment(row);
}

export async function listEnvironments(db: Db, projectId: string) {
  const rows = await db.selectFrom('environments').select(COLUMNS).where('project_id', '=', projectId).orderBy('created_at').orderBy('id').execute();
  return rows.map(toEnvironment);
}

export async function createEnvironment(db: Db, projectId: string, fields: { name: string; key: string }) {
  const now = nowIso();
  const environment = { id: newId(), project_id: projectId, name: fields.name, key: fields.key, approvals_required: 0, created_at: now, updated_at: now };
  await notFoundIfParentGone(
    conflictOnDuplicate(db.insertInto('environments').values(environment).execute(), `An environment with key "${fields.key}" already exists in this project`),
    'Project not found',
  );
  return toEnvironment(environment);
}

export async function updateEnvironment(db: Db, envId: string, changes: { name?: string; approvals_required?: number }) {
  const row = await db.updateTable('environments').set({ ...changes, updated_at: nowIso() }).where('id', '=', envId).returning(['id', 'project_id', 'name', 'key', 'approvals_required', 'created_at']).executeTakeFirst();
  if (!row) throw new NotFound('Environment not found');
  return toEnvironment(row);
}

/** Its flags, their rules and its evaluation history go with it (foreign keys cascade). */
export async function deleteEnvironment(db: Db, envId: string): Promise<void> {
  await db.deleteFrom('environments').where('id', '=', envId).execute();
}

import { randomBytes } from 'node:crypto';
import type { Db } from '../../db/database.js';
import { newId, nowIso, toIso } from '../../db/values.js';
import { NotFound } from '../../errors.js';
import type { ProjectsTable } from '../../db/schema.js';
import type { Selectable } from 'kysely';

const COLUMNS = ['id', 'name', 'description', 'sdk_key', 'created_at', 'updated_at'] as const;
type ProjectRow = Pick<Selectable<ProjectsTable>, (typeof COLUMNS)[number]>;

export const DEFAULT_ENVIRONMENTS = [
  { name: 'Production', key: 'production' },
  { name: 'Staging', key: 'staging' },
] as const;

const newSdkKey = () => `sdk_${randomBytes(24).toString('base64url')}`;

function toProject(row: ProjectRow) {
  return { ...row, created_at: toIso(row.created_at), updated_at: toIso(row.updated_at) };
}

/** The project, if it exists and belongs to the user; else NotFound (another user's project is not shown). */
export async function requireProject(db: Db, ownerId: string, projectId: string) {
  const row = await db.selectFrom('projects').select(COLUMNS).where('id', '=', projectId).where('owner_id', '=', ownerId).executeTakeFirst();
  if (!row) throw new NotFound('Project not found');
  return toProject(row);
}

export async function listProjects(db: Db, ownerId: string) {
  const rows = await db.selectFrom('projects').select(COLUMNS).where('owner_id', '=', ownerId).orderBy('created_at').orderBy('id').execute();
  return rows.map(toProject);
}

/** Creates the project with its production and staging environments, in one transaction. */
export async function createProject(db: Db, ownerId: string, fields: { name: string; description?: string | null | undefined }) {
  const now = nowIso();
  const project = { id: newId(), owner_id: ownerId, name: fields.name, description: fields.description ?? null, sdk_key: newSdkKey(), created_at: now, updated_at: now };
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('projects').values(project).execute();
    await trx
      .insertInto('environments')
      .values(DEFAULT_ENVIRONMENTS.map((env) => ({ id: newId(), project_id: project.id, ...env, created_at: nowIso(), updated_at: now })))
      .execute();
  });
  const { owner_id: _owner, ...shown } = project;
  return shown;
}

/** Changes the user's project (name, description or SDK key); updated_at moves. */
export async function updateProject(db: Db, ownerId: string, projectId: string, changes: Partial<{ name: string; description: string | null; sdk_key: string }>) {
  const row = await db
    .updateTable('projects')
    .set({ ...changes, updated_at: nowIso() })
    .where('id', '=', projectId)
    .where('owner_id', '=', ownerId)
    .returning(COLUMNS)
    .executeTakeFirst();
  if (!row) throw new NotFound('Project not found');
  return toProject(row);
}

/** A new SDK key replaces the old one, which stops working at once. */
export function regenerateSdkKey(db: Db, ownerId: string, projectId: string) {
  return updateProject(db, ownerId, projectId, { sdk_key: newSdkKey() });
}

/** Environments, flags, rules and evaluation history go with it (foreign keys cascade). */
export async function deleteProject(db: Db, ownerId: string, projectId: string): Promise<void> {
  const result = await db.deleteFrom('projects').where('id', '=', projectId).where('owner_id', '=', ownerId).executeTakeFirst();
  if (result.numDeletedRows === 0n) throw new NotFound('Project not found');
}

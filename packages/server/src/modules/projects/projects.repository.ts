import { randomBytes } from 'node:crypto';
import type { Db } from '../../db/database.js';
import { newId, nowIso, toIso } from '../../db/values.js';
import { NotFound } from '../../errors.js';
import type { ProjectsTable, Role } from '../../db/schema.js';
import type { Selectable } from 'kysely';
import type { Actor } from '../changes/changes.schemas.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import { listEnvironments } from '../environments/environments.repository.js';

const COLUMNS = ['projects.id', 'projects.name', 'projects.description', 'projects.sdk_key', 'projects.created_at', 'projects.updated_at'] as const;
type ProjectRow = Pick<Selectable<ProjectsTable>, 'id' | 'name' | 'description' | 'sdk_key' | 'created_at' | 'updated_at'>;

export const DEFAULT_ENVIRONMENTS = [
  { name: 'Production', key: 'production' },
  { name: 'Staging', key: 'staging' },
] as const;

const newSdkKey = () => `sdk_${randomBytes(24).toString('base64url')}`;

function toProject(row: ProjectRow) {
  return { id: row.id, name: row.name, description: row.description, sdk_key: row.sdk_key, created_at: toIso(row.created_at), updated_at: toIso(row.updated_at) };
}

/** The project (who may see it is decided before, by the route's declared role: members/access.ts). */
export async function requireProject(db: Db, projectId: string) {
  const row = await db.selectFrom('projects').select(COLUMNS).where('id', '=', projectId).executeTakeFirst();
  if (!row) throw new NotFound('Project not found');
  return toProject(row);
}

/** Every project the user is an active member of, with the user's role; `only` narrows to one (a project token). */
export async function listProjects(db: Db, userId: string, only: string | null = null) {
  let select = db
    .selectFrom('projects')
    .innerJoin('project_members', 'project_members.project_id', 'projects.id')
    .select([...COLUMNS, 'project_members.role'])
    .where('project_members.user_id', '=', userId);
  if (only) select = select.where('projects.id', '=', only);
  const rows = await select.orderBy('projects.created_at').orderBy('projects.id').execute();
  return rows.map((row) => ({ ...toProject(row), role: row.role }));
}

/** Creates the project with its production and staging environments; the creator is its owner. */
export async function createProject(trx: Db, id: string, owner: { id: string; email: string }, fields: { name: string; description?: string | null | undefined }) {
  const now = nowIso();
  const project = { id, owner_id: owner.id, name: fields.name, description: fields.description ?? null, sdk_key: newSdkKey(), created_at: now, updated_at: now };
  await trx.insertInto('projects').values(project).execute();
  await trx
    .insertInto('environments')
    .values(DEFAULT_ENVIRONMENTS.map((env) => ({ id: newId(), project_id: project.id, ...env, created_at: nowIso(), updated_at: now })))
    .execute();
  await trx.insertInto('project_members').values({ id: newId(), project_id: project.id, user_id: owner.id, email: owner.email, role: 'owner' as Role, created_at: now }).execute();
  return toProject(project);
}

/** Changes the project (name, description or SDK key); updated_at moves. */
export async function updateProject(trx: Db, projectId: string, changes: Partial<{ name: string; description: string | null; sdk_key: string }>) {
  const row = await trx.updateTable('projects').set({ ...changes, updated_at: nowIso() }).where('id', '=', projectId).returning(['id', 'name', 'description', 'sdk_key', 'created_at', 'updated_at']).executeTakeFirst();
  if (!row) throw new NotFound('Project not found');
  return toProject(row);
}

/** A new SDK key replaces the old one, which stops working at once. */
export function regenerateSdkKey(trx: Db, projectId: string) {
  return updateProject(trx, projectId, { sdk_key: newSdkKey() });
}

/** Environments, flags, rules, members, audit events, webhooks and history go with it (foreign keys cascade). */
async function deleteProjectRow(trx: Db, projectId: string): Promise<void> {
  const result = await trx.deleteFrom('projects').where('id', '=', projectId).executeTakeFirst();
  if (result.numDeletedRows === 0n) throw new NotFound('Project not found');
}

/**
 * Deletes the project and everything in it. Its evaluation history first, in bounded steps (the
 * cascade would delete it in one long statement); then the rest through the change path, which
 * records no event (the project's audit log goes with it) and drops its compiled views everywhere.
 */
export async function deleteProject({ db, writes, history }: { db: Db; writes: ProjectWrites; history: HistoryRecorder }, actor: Actor, projectId: string): Promise<void> {
  await history.deleteHistory((await listEnvironments(db, projectId)).map((env) => env.id));
  await writes.apply(actor, projectId, (trx) => deleteProjectRow(trx, projectId));
}

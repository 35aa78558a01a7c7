import type { Db } from '../../db/database.js';

/** Marks a project as changed: projects.revision counts its committed writes. */
export async function bumpRevision(db: Db, projectId: string): Promise<void> {
  await db.updateTable('projects').set((eb) => ({ revision: eb('revision', '+', 1) })).where('id', '=', projectId).execute();
}

/** The current revision of each of these projects; a deleted project is missing from the map. */
export async function currentRevisions(db: Db, projectIds: string[]): Promise<Map<string, number>> {
  const revisions = new Map<string, number>();
  for (let start = 0; start < projectIds.length; start += 500) {
    const rows = await db.selectFrom('projects').select(['id', 'revision']).where('id', 'in', projectIds.slice(start, start + 500)).execute();
    for (const row of rows) revisions.set(row.id, Number(row.revision));
  }
  return revisions;
}

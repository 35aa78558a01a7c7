import { useParams } from 'react-router';
import { useProject } from './queries';

export type Role = 'viewer' | 'editor' | 'owner';
const RANK: Record<Role, number> = { viewer: 0, editor: 1, owner: 2 };

export const atLeast = (role: Role | undefined, need: Role) => role !== undefined && RANK[role] >= RANK[need];

/** Why a control is disabled, in words a person can act on. */
export const reasonFor = (need: Role) =>
  need === 'owner' ? 'Only an owner of this project can do this.' : 'Viewers can look but not change: ask an owner for the editor role.';

/**
 * The caller's role in the current project (docs/api.md: the project object carries it) and what
 * it allows. `can('editor')` guards every write an editor may make; controls it refuses are shown
 * disabled with `reason(...)` as their title, never left to fail with a 403.
 */
export function useRole(projectId?: string) {
  const params = useParams();
  const project = useProject(projectId ?? params.projectId ?? '');
  const role = project.data?.role;
  return { role, can: (need: Role) => atLeast(role, need), reason: reasonFor };
}

import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { dropInvitationToken } from '../accounts/invitation-tokens.js';
import { acceptInvitation, pendingInvitations } from './members.repository.js';

/**
 * The address is proven (registration with the invitation's secret, a verification link, a
 * password reset; accounts/ says so through app.ts): every invitation for it becomes the user's
 * membership, one audit event (`member.joined`) in each project. Never called for an address
 * that is not proven.
 */
export async function joinInvitedProjects(writes: ProjectWrites, db: Db, user: { id: string; email: string }): Promise<void> {
  for (const invitation of await pendingInvitations(db, user.email)) {
    await writes.apply({ user_id: user.id, email: user.email, token_id: null }, invitation.project_id, async (trx, record) => {
      const { project_id: _project, ...before } = invitation;
      const after = await acceptInvitation(trx, invitation.id, user.id);
      if (after) record({ action: 'member.joined', resource_type: 'member', resource_id: after.id, before, after });
    });
  }
  await dropInvitationToken(db, user.email); // nothing waits for its link any more
}

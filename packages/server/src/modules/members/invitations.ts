import type { Db } from '../../db/database.js';
import type { Actor } from '../changes/changes.schemas.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { dropInvitationToken } from '../accounts/invitation-tokens.js';
import { acceptInvitation, findPendingInvitation, hasPendingInvitation, removeMember, type Member } from './members.repository.js';

/** Who answers an invitation: a verified account whose address is the invited one (the caller checks the verification). */
export interface Invitee {
  id: string;
  email: string;
  actor: Actor;
}

/**
 * The invitee answers an invitation (docs/api.md, Members: nobody joins a project without
 * accepting): accepting makes it their membership (`member.joined`), declining removes it
 * (`member.removed`), each recorded in the project as done by them. Undefined when no such
 * invitation waits for their address. Once none waits, the address's emailed link stops working.
 */
export async function answerInvitation(writes: ProjectWrites, db: Db, invitee: Invitee, memberId: string, accept: boolean): Promise<Member | undefined> {
  const invitation = await findPendingInvitation(db, memberId, invitee.email);
  if (!invitation) return undefined;
  const { project_id: projectId, ...before } = invitation;
  return writes.apply(invitee.actor, projectId, async (trx, record) => {
    let after: Member | undefined;
    if (accept) {
      after = await acceptInvitation(trx, memberId, invitee.id);
      if (after) record({ action: 'member.joined', resource_type: 'member', resource_id: memberId, before, after });
    } else if (await findPendingInvitation(trx, memberId, invitee.email)) {
      await removeMember(trx, projectId, before);
      record({ action: 'member.removed', resource_type: 'member', resource_id: memberId, before, after: null });
      after = before;
    }
    if (!(await hasPendingInvitation(trx, invitee.email))) await dropInvitationToken(trx, invitee.email);
    return after;
  });
}

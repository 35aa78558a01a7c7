import type { Db } from '../../db/database.js';
import type { Actor } from '../changes/changes.schemas.js';
import type { ProjectWrites, RecordChange } from '../changes/project-writes.js';
import { dropInvitationToken } from '../accounts/invitation-tokens.js';
import { acceptInvitation, findPendingInvitation, hasPendingInvitation, removeMember, type Member } from './members.repository.js';

/**
 * The invitee answers an invitation (docs/api.md, Members: nobody joins a project without
 * accepting): accepting makes it their membership (`member.joined`), declining removes it
 * (`member.removed`), each recorded in the project as done by them. `invitee` is a verified
 * account (the caller checks) whose address must be the invited one. Undefined when no such
 * invitation waits for it. Once none waits, the address's emailed link stops working.
 */
export async function answerInvitation(writes: ProjectWrites, db: Db, invitee: Actor & { user_id: string; email: string }, memberId: string, accept: boolean): Promise<Member | undefined> {
  const invitation = await findPendingInvitation(db, memberId, invitee.email);
  if (!invitation) return undefined;
  return writes.apply(invitee, invitation.project_id, async (trx, record) => {
    const answered = accept ? await acceptInvitation(trx, memberId, invitee.user_id) : await withdrawInvitation(trx, record, memberId, invitee.email);
    if (accept && answered) record({ action: 'member.joined', resource_type: 'member', resource_id: memberId, before: withoutProject(invitation), after: answered });
    if (!(await hasPendingInvitation(trx, invitee.email))) await dropInvitationToken(trx, invitee.email);
    return answered;
  });
}

const withoutProject = ({ project_id: _project, ...member }: Member & { project_id: string }): Member => member;

/**
 * Removes the invitation if it still waits for the address, recorded as `member.removed` by
 * whoever acts (its invitee declining, or its invitee's account being deleted). The removed
 * invitation, or undefined.
 */
export async function withdrawInvitation(trx: Db, record: RecordChange, memberId: string, email: string): Promise<Member | undefined> {
  const invitation = await findPendingInvitation(trx, memberId, email);
  if (!invitation) return undefined;
  const before = withoutProject(invitation);
  await removeMember(trx, invitation.project_id, before);
  record({ action: 'member.removed', resource_type: 'member', resource_id: memberId, before, after: null });
  return before;
}

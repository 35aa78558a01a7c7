import { Type } from 'typebox';
import { Timestamp, Uuid } from '../../http/schemas.js';

export const RoleName = Type.Union([Type.Literal('viewer'), Type.Literal('editor'), Type.Literal('owner')]);

export const Member = Type.Object(
  {
    id: Uuid,
    user_id: Type.Union([Uuid, Type.Null()]),
    email: Type.String(),
    role: RoleName,
    status: Type.Union([Type.Literal('active'), Type.Literal('invited')]),
    created_at: Timestamp,
  },
  { $id: 'Member' },
);

export const AddMemberBody = Type.Object({ email: Type.String({ minLength: 3, maxLength: 320 }), role: RoleName });
export const ChangeMemberBody = Type.Object({ role: RoleName });
export const MemberParams = Type.Object({ project_id: Uuid, member_id: Uuid });

/** An invitation as its invitee sees it (GET /api/invitations). */
export const Invitation = Type.Object({
  id: Uuid,
  project: Type.Object({ id: Uuid, name: Type.String() }),
  role: RoleName,
  invited_by: Type.Object({ email: Type.String({ description: 'who sent it' }) }),
  created_at: Timestamp,
});
export const InvitationParams = Type.Object({ invitation_id: Uuid });

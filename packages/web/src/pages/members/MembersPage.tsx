import { useState, type FormEvent } from 'react';
import { useNavigate, useParams } from 'react-router';
import type { Member } from '../../api/client';
import { useChangeRole, useInvite, useRemoveMember } from '../../api/members';
import { useMe, useMembers } from '../../api/queries';
import { useRole, type Role } from '../../api/roles';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { Field } from '../../components/Field';
import { RoleNote } from '../../components/RoleNote';
import { QueryState } from '../../components/States';
import { FormError } from '../../components/FormError';

export const ROLES: { value: Role; label: string; may: string }[] = [
  { value: 'viewer', label: 'Viewer', may: 'reads flags, rules, history and the audit log' },
  { value: 'editor', label: 'Editor', may: 'also creates, changes and toggles environments, flags and rules' },
  { value: 'owner', label: 'Owner', may: 'also manages members, webhooks, the SDK key and the project' },
];

export function MembersPage() {
  const { projectId = '' } = useParams();
  const members = useMembers(projectId);
  const me = useMe();
  const { can, reason } = useRole(projectId);
  const setRole = useChangeRole(projectId);
  const navigate = useNavigate();
  const remove = useRemoveMember(projectId, () => navigate('/', { replace: true, flushSync: true }));
  const [removing, setRemoving] = useState<Member | null>(null);
  const [error, setError] = useState<string | null>(null);
  const isOwner = can('owner');

  const changeRole = async (member: Member, role: Role) => {
    setError(null);
    try {
      await setRole.mutateAsync({ member, role });
    } catch (caught) {
      setError(`${member.email} keeps the ${member.role} role: ${(caught as Error).message}`);
    }
  };

  const leaving = removing !== null && removing.user_id === me.data?.user_id;
  return (
    <div className="stack">
      <section className="panel">
        <h2>Members</h2>
        <p className="muted">
          {ROLES.map((role) => (
            <span key={role.value} className="role-help">
              <strong>{role.label}</strong> {role.may}.{' '}
            </span>
          ))}
        </p>
        {!isOwner && <RoleNote need="owner" what="invite people or change roles" />}
        <FormError message={error} />
        <QueryState query={members} what="members">
          {(list) => (
            <ul className="rows" aria-label="Members and invitations">
              {list.map((member) => {
                const isMe = member.user_id !== null && member.user_id === me.data?.user_id;
                return (
                  <li key={member.id} className="row">
                    <div>
                      <strong>{member.email}</strong>
                      {isMe && <span className="badge role">you</span>}
                      {member.status === 'invited' && (
                        <span className="badge invited" title="Invited by email; a member once they accept">
                          invited
                        </span>
                      )}
                    </div>
                    <div className="row-actions">
                      <label className="visually-hidden" htmlFor={`role-${member.id}`}>
                        Role of {member.email}
                      </label>
                      <select
                        id={`role-${member.id}`}
                        value={member.role}
                        disabled={!isOwner}
                        title={isOwner ? undefined : reason('owner')}
                        onChange={(event) => void changeRole(member, event.target.value as Role)}
                      >
                        {ROLES.map((role) => (
                          <option key={role.value} value={role.value}>
                            {role.label}
                          </option>
                        ))}
                      </select>
                      {isMe ? (
                        <button type="button" className="secondary small" onClick={() => setRemoving(member)}>
                          Leave project
                        </button>
                      ) : (
                        isOwner && (
                          <button type="button" className="danger small" onClick={() => setRemoving(member)} aria-label={`${member.status === 'invited' ? 'Cancel invitation for' : 'Remove'} ${member.email}`}>
                            {member.status === 'invited' ? 'Cancel invitation' : 'Remove'}
                          </button>
                        )
                      )}
                    </div>
                  </li>
                );
              })}
            </ul>
          )}
        </QueryState>
      </section>
      {isOwner && <InviteForm projectId={projectId} />}
      <ConfirmDialog
        open={removing !== null}
        onOpenChange={(open) => !open && setRemoving(null)}
        title={leaving ? 'Leave this project?' : `Remove ${removing?.email ?? ''}?`}
        description={leaving ? 'You lose access at once; an owner can invite you again.' : 'They lose access to this project at once. Their past changes stay in the audit log.'}
        confirmLabel={leaving ? 'Leave project' : 'Remove'}
        onConfirm={async () => {
          if (!removing) return;
          await remove.mutateAsync(removing);
        }}
      />
    </div>
  );
}

function InviteForm({ projectId }: { projectId: string }) {
  const invite = useInvite(projectId);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('editor');
  const [errors, setErrors] = useState<{ email?: string; form?: string }>({});
  const [done, setDone] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone(null);
    if (!/^\S+@\S+\.\S+$/.test(email.trim())) return setErrors({ email: 'Enter an email address such as ada@example.com' });
    setErrors({});
    setBusy(true);
    try {
      const member = await invite.mutateAsync({ email: email.trim(), role });
      setDone(`Invited ${member.email}: they join once they accept, from the email's link (valid 7 days) or, with an account, from their projects page.`);
      setEmail('');
    } catch (caught) {
      setErrors({ form: (caught as Error).message });
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="panel">
      <h2>Invite someone</h2>
      <p className="muted">Everyone gets an email, and joins only by accepting it: with the email's link, or on their projects page if they have an account. At most 3 invitations a day to one address from this project.</p>
      <form onSubmit={submit} noValidate className="inline-form">
        <Field label="Email of the person to invite" type="email" value={email} onChange={setEmail} error={errors.email} autoComplete="off" />
        <div className="field">
          <label htmlFor="invite-role">Role</label>
          <select id="invite-role" value={role} onChange={(event) => setRole(event.target.value as Role)}>
            {ROLES.map((item) => (
              <option key={item.value} value={item.value}>
                {item.label}
              </option>
            ))}
          </select>
        </div>
        <div className="actions start">
          <button type="submit" disabled={busy}>
            Invite
          </button>
        </div>
      </form>
      <FormError message={errors.form} />
      <p role="status" className="notice-slot">
        {done}
      </p>
    </section>
  );
}

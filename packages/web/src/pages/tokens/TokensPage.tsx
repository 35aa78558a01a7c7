import { useState, type FormEvent } from 'react';
import type { ApiToken } from '../../api/client';
import { useCreateToken, useRevokeToken } from '../../api/tokens';
import { useMe, useProjects, useTokens } from '../../api/queries';
import { atLeast, type Role } from '../../api/roles';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { Field } from '../../components/Field';
import { SecretOnce } from '../../components/SecretOnce';
import { Modal } from '../../components/Modal';
import { Empty, QueryState } from '../../components/States';
import { ago, dateTime } from '../../components/time';
import { ROLES } from '../members/MembersPage';
import { FormError } from '../../components/FormError';

const EXPIRY = [
  { days: 30, label: '30 days' },
  { days: 90, label: '90 days' },
  { days: 365, label: '1 year' },
  { days: 0, label: 'Never' },
];

/** Personal API tokens for scripts and CI (docs/api.md): per user, so on the account page. */
export function TokensPage() {
  const me = useMe();
  // Only an account whose address is verified holds tokens (docs/api.md): the others see why.
  const unverified = me.data?.email_verified === false;
  const tokens = useTokens(me.data?.email_verified === true);
  const projects = useProjects();
  const revoke = useRevokeToken();
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<(ApiToken & { token: string }) | null>(null);
  const [revoking, setRevoking] = useState<ApiToken | null>(null);
  const projectName = (id: string | null) => (id === null ? 'Every project' : (projects.data?.find((project) => project.id === id)?.name ?? 'A project you left'));

  return (
    <div className="stack">
      <div className="page-head">
        <div>
          <p className="eyebrow">Your account</p>
          <h1>API tokens</h1>
        </div>
        <button type="button" onClick={() => setCreating(true)} disabled={unverified} aria-describedby={unverified ? 'tokens-need-verification' : undefined}>
          New token
        </button>
      </div>
      {unverified && (
        <p className="notice" id="tokens-need-verification">
          API tokens need a verified email address: open the link we emailed to {me.data?.email} (the banner above sends a new one).
        </p>
      )}
      <p className="muted">
        Scripts and CI send a token as <code>Authorization: Bearer gdn_…</code> on /api. It acts as you, limited to one project and a role if you choose. Tokens cannot create or revoke tokens.
      </p>
      {created && (
        <SecretOnce
          id="new-token-title"
          title={`Token ${created.name} created`}
          note="Copy it now: it is shown only this once. Guidon keeps only a hash of it."
          secret={created.token}
          secretLabel="The new token"
          copyLabel="Copy the new token"
          onDone={() => setCreated(null)}
        />
      )}
      {!unverified && <QueryState query={tokens} what="your tokens">
        {(list) =>
          list.length === 0 ? (
            <Empty title="No tokens yet" level={2}>
              <p>Create one for a deploy script or CI job instead of putting your password in it.</p>
            </Empty>
          ) : (
            <div className="table-wrap">
              <table className="list">
                <caption className="visually-hidden">Your API tokens</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Reaches</th>
                    <th scope="col">Created</th>
                    <th scope="col">Expires</th>
                    <th scope="col">Last used</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((token) => {
                    const expired = token.expires_at !== null && Date.parse(token.expires_at) < Date.now();
                    return (
                      <tr key={token.id}>
                        <th scope="row">{token.name}</th>
                        <td data-label="Reaches">
                          {projectName(token.project_id)}
                          {token.role && <span className="muted small"> as {token.role}</span>}
                        </td>
                        <td data-label="Created">{dateTime(token.created_at)}</td>
                        <td data-label="Expires">{token.expires_at ? <span className={expired ? 'badge stale' : undefined}>{expired ? 'expired' : dateTime(token.expires_at)}</span> : 'never'}</td>
                        <td data-label="Last used">{ago(token.last_used_at)}</td>
                        <td>
                          <button type="button" className="danger small" onClick={() => setRevoking(token)} aria-label={`Revoke ${token.name}`}>
                            Revoke
                          </button>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )
        }
      </QueryState>}
      {creating && (
        <CreateTokenDialog
          onClose={() => setCreating(false)}
          onCreated={setCreated}
        />
      )}
      <ConfirmDialog
        open={revoking !== null}
        onOpenChange={(open) => !open && setRevoking(null)}
        title={`Revoke ${revoking?.name ?? ''}?`}
        description="Every script using it gets 401 from its very next request. This cannot be undone."
        confirmLabel="Revoke token"
        onConfirm={async () => {
          if (!revoking) return;
          await revoke.mutateAsync(revoking.id);
          if (created?.id === revoking.id) setCreated(null);
        }}
      />
    </div>
  );
}

function CreateTokenDialog({ onClose, onCreated }: { onClose: () => void; onCreated: (token: ApiToken & { token: string }) => void }) {
  const projects = useProjects();
  const create = useCreateToken();
  const [name, setName] = useState('');
  const [projectId, setProjectId] = useState('');
  const [role, setRole] = useState<Role | ''>('');
  const [days, setDays] = useState(90);
  const [errors, setErrors] = useState<{ name?: string; form?: string }>({});
  const [busy, setBusy] = useState(false);
  const project = projects.data?.find((item) => item.id === projectId);
  // A token may not do more than its maker: only roles up to the caller's in that project.
  const roles = ROLES.filter((item) => atLeast(project?.role, item.value));

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!name.trim()) return setErrors({ name: 'Name it after what will use it, e.g. deploy script' });
    setErrors({});
    setBusy(true);
    try {
      const body = { name: name.trim(), ...(projectId ? { project_id: projectId } : {}), ...(projectId && role ? { role } : {}), ...(days ? { expires_in_days: days } : {}) };
      onCreated(await create.mutateAsync(body));
      onClose();
    } catch (caught) {
      setErrors({ form: (caught as Error).message });
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal open onOpenChange={(open) => !open && onClose()} title="New API token" description="The secret is shown once, after you create it.">
      <form onSubmit={submit} noValidate>
        <Field label="Token name" value={name} onChange={setName} error={errors.name} maxLength={200} autoFocus />
        <div className="field">
          <label htmlFor="token-project">Project</label>
          <select
            id="token-project"
            value={projectId}
            onChange={(event) => {
              setProjectId(event.target.value);
              setRole('');
            }}
          >
            <option value="">Every project of mine, with my roles</option>
            {(projects.data ?? []).map((item) => (
              <option key={item.id} value={item.id}>
                {item.name}
              </option>
            ))}
          </select>
        </div>
        {projectId && (
          <div className="field">
            <label htmlFor="token-role">Role</label>
            <select id="token-role" value={role} onChange={(event) => setRole(event.target.value as Role | '')} aria-describedby="token-role-hint">
              <option value="">My role there ({project?.role})</option>
              {roles.map((item) => (
                <option key={item.value} value={item.value}>
                  {item.label}
                </option>
              ))}
            </select>
            <p className="hint" id="token-role-hint">
              At most your own role. A viewer token can read but never change anything.
            </p>
          </div>
        )}
        <div className="field">
          <label htmlFor="token-expiry">Expires after</label>
          <select id="token-expiry" value={days} onChange={(event) => setDays(Number(event.target.value))}>
            {EXPIRY.map((item) => (
              <option key={item.days} value={item.days}>
                {item.label}
              </option>
            ))}
          </select>
        </div>
        <FormError message={errors.form} />
        <div className="actions">
          <button type="button" className="secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" disabled={busy}>
            Create token
          </button>
        </div>
      </form>
    </Modal>
  );
}

import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { useDeleteAccount } from '../../api/account';
import { useMe, useSignInMethods, useSignInOptions } from '../../api/queries';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { Field } from '../../components/Field';
import { QueryState } from '../../components/States';

/** The signed-in person's account: the address, whether it is verified, and where tokens live. */
export function AccountPage() {
  const me = useMe();
  const methods = useSignInMethods();
  const options = useSignInOptions();
  return (
    <div className="stack">
      <div className="page-head">
        <div>
          <p className="eyebrow">Your account</p>
          <h1>Account</h1>
        </div>
      </div>
      <QueryState query={me} what="your account">
        {(account) => (
          <section className="panel">
            <h2>Email address</h2>
            <dl className="facts">
              <dt>Address</dt>
              <dd>{account.email}</dd>
              <dt>Status</dt>
              <dd>
                {account.email_verified ? (
                  <span className="badge verified">Verified</span>
                ) : (
                  <>
                    <span className="badge unverified">Not verified</span>{' '}
                    <span className="muted">Open the link we emailed you (the banner above sends a new one). Until then you cannot create API tokens or invite anyone, and invitations to you wait.</span>
                  </>
                )}
              </dd>
            </dl>
          </section>
        )}
      </QueryState>
      <QueryState query={methods} what="your sign-in methods">
        {({ methods: has }) => (
          <section className="panel">
            <h2>Sign-in methods</h2>
            <ul>
              {has.includes('password') && <li>Email and password</li>}
              {has.includes('oidc') && <li>{options.data?.oidc?.name ?? 'SSO'} (your organisation&apos;s sign-in)</li>}
            </ul>
            {!has.includes('password') && options.data?.password && (
              <p className="muted">
                To also sign in with a password, set one with <Link to="/forgot-password">Forgot your password?</Link>
              </p>
            )}
          </section>
        )}
      </QueryState>
      <section className="panel">
        <h2>Scripts and CI</h2>
        <p>
          <Link to="/account/tokens">API tokens</Link> let scripts act as you without your password.
        </p>
      </section>
      <DeleteAccount hasPassword={methods.data?.methods.includes('password') ?? true} />
    </div>
  );
}

/**
 * Deleting one's own account, confirmed in a dialog: by the password, or (an account without one)
 * by a recent sign-in. The server's refusal shows in the dialog, e.g. the projects that need
 * another owner first.
 */
function DeleteAccount({ hasPassword }: { hasPassword: boolean }) {
  const [open, setOpen] = useState(false);
  const [password, setPassword] = useState('');
  const remove = useDeleteAccount();
  const navigate = useNavigate();
  return (
    <section className="panel" aria-labelledby="delete-account-title">
      <h2 id="delete-account-title">Delete your account</h2>
      <p>
        Your API tokens and every session end at once, you leave every project, and the projects only you belong to are deleted with their flags and history.
        Projects others belong to stay with them; your past changes stay in their audit logs under your email.
      </p>
      <button type="button" className="danger" onClick={() => setOpen(true)}>
        Delete my account
      </button>
      <ConfirmDialog
        open={open}
        onOpenChange={(next) => {
          setOpen(next);
          if (!next) setPassword('');
        }}
        title="Delete your account?"
        description={
          hasPassword
            ? 'This cannot be undone. Enter your password to confirm.'
            : 'This cannot be undone. Your account has no password: you confirm by having signed in within the last 10 minutes.'
        }
        confirmLabel="Delete account"
        onConfirm={async () => {
          await remove.mutateAsync(hasPassword ? password : null);
          navigate('/login?account=deleted', { replace: true });
        }}
      >
        {hasPassword && <Field label="Your password" type="password" autoComplete="current-password" value={password} onChange={setPassword} />}
      </ConfirmDialog>
    </section>
  );
}

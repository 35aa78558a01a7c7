import { Link } from 'react-router';
import { useMe, useSignInMethods, useSignInOptions } from '../../api/queries';
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
                    <span className="muted">Open the link we emailed you (the banner above sends a new one). Until then you cannot create API tokens, and invitations wait.</span>
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
    </div>
  );
}

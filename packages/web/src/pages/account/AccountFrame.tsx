import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { fields } from '../../api/fields';
import { useSignInOptions } from '../../api/queries';

/** The centred card of the pages before sign-in. */
export function AccountFrame({ title, children, footer }: { title: string; children: ReactNode; footer?: ReactNode }) {
  return (
    <main id="main" className="account">
      <div className="account-card">
        <p className="brand account-brand" aria-hidden="true">
          <svg viewBox="0 0 32 32" width="26" height="26">
            <path d="M6 3v26" stroke="currentColor" strokeWidth="3" strokeLinecap="round" />
            <path d="M7 5h18l-5 6 5 6H7z" fill="currentColor" />
          </svg>
          Guidon
        </p>
        <h1>{title}</h1>
        {children}
        {footer && <div className="account-footer">{footer}</div>}
      </div>
    </main>
  );
}

const returnPath = new RegExp(fields.returnPath.pattern);

/**
 * Only a path of this site is a place to return to after logging in: the server's own rule (its
 * ReturnPath schema, read into fields.ts), so "/\\evil.example" is refused here as it is there.
 */
export function safeNext(next: string | null): string {
  return next !== null && next.length <= fields.returnPath.maxLength && returnPath.test(next) ? next : '/';
}

/**
 * Pages of password accounts (sign-up, including an invitation's link, and password reset): with
 * PASSWORD_LOGIN=false the server refuses them (403), so they send the person to the provider.
 */
export function PasswordOnly({ children }: { children: ReactNode }) {
  const options = useSignInOptions();
  const oidc = options.data?.oidc;
  if (options.data?.password !== false || !oidc) return children;
  return (
    <AccountFrame title="Sign in" footer={<Link to="/login">Back to log in</Link>}>
      <p>
        Passwords are turned off here: everyone signs in with {oidc.name}. Once signed in with your address, you accept the invitation on your projects page.
      </p>
      <p>
        <a className="button sso" href={oidc.login_url}>
          Sign in with {oidc.name}
        </a>
      </p>
    </AccountFrame>
  );
}

import { useEffect } from 'react';
import { Link, Outlet, useLocation, useNavigate } from 'react-router';
import { useLogOut } from '../api/account';
import { session } from '../api/session';
import { VerifyEmailBanner } from './VerifyEmail';

/** The frame of every signed-in page: the brand, the account, log out, and the banner of an unverified address. */
export function AppLayout() {
  const navigate = useNavigate();
  const logOutMutation = useLogOut();
  const { pathname } = useLocation();
  // A page left from a control that goes with it (a dialog's Delete, Leave project) takes the
  // keyboard focus along, to <body>: the new page's main content gets it.
  useEffect(() => {
    if (document.activeElement === null || document.activeElement === document.body) document.getElementById('main')?.focus();
  }, [pathname]);
  const logOut = async () => {
    const viaProvider = session.via() === 'oidc';
    // The server ends this login token everywhere (docs/security.md); this browser forgets it either way.
    await logOutMutation.mutateAsync();
    // Signed in at the OpenID provider: the server sends the browser there to end that session too (docs/security.md).
    if (viaProvider) window.location.assign('/auth/oidc/logout');
    else navigate('/login', { replace: true });
  };
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/" className="brand" aria-label="Guidon: your projects">
          <svg viewBox="0 0 32 32" width="22" height="22" aria-hidden="true">
            <path d="M6 3v26" stroke="currentColor" strokeWidth="3" strokeLinecap="round" />
            <path d="M7 5h18l-5 6 5 6H7z" fill="currentColor" />
          </svg>
          Guidon
        </Link>
        <nav className="account-links" aria-label="Account">
          <Link to="/account" className="small">
            Account
          </Link>
          <Link to="/account/tokens" className="small">
            API tokens
          </Link>
          <button type="button" className="secondary small" onClick={() => void logOut()}>
            Log out
          </button>
        </nav>
      </header>
      <VerifyEmailBanner />
      <main id="main" tabIndex={-1}>
        <Outlet />
      </main>
    </>
  );
}

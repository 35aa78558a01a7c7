import { useQueryClient } from '@tanstack/react-query';
import { Link, Outlet, useNavigate } from 'react-router';
import { session } from '../api/session';

/** The frame of every signed-in page: the brand, and log out. */
export function AppLayout() {
  const navigate = useNavigate();
  const client = useQueryClient();
  const logOut = () => {
    session.signOut();
    client.clear();
    navigate('/login', { replace: true });
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
          <Link to="/account/tokens" className="small">
            API tokens
          </Link>
          <button type="button" className="secondary small" onClick={logOut}>
            Log out
          </button>
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        <Outlet />
      </main>
    </>
  );
}

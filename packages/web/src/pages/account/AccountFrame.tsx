import type { ReactNode } from 'react';

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

/** Only a path of this site is a place to return to after logging in. */
export function safeNext(next: string | null): string {
  return next && next.startsWith('/') && !next.startsWith('//') ? next : '/';
}

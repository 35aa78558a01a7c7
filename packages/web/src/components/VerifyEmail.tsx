import { useState } from 'react';
import { useResendVerification } from '../api/account';
import { useMe } from '../api/queries';

/**
 * Over every signed-in page while the address is not verified (docs/security.md): what waits, and a
 * new link on request (the server sends at most 5 an hour; a refusal is said in an alert).
 */
export function VerifyEmailBanner() {
  const me = useMe();
  const [state, setState] = useState<{ sent?: string; error?: string }>({});
  const [busy, setBusy] = useState(false);
  const resendVerification = useResendVerification();
  if (!me.data || me.data.email_verified) return null;

  const resend = async () => {
    setBusy(true);
    setState({});
    try {
      await resendVerification.mutateAsync();
      setState({ sent: 'A new link is on its way: check your inbox.' });
    } catch (error) {
      setState({ error: (error as Error).message });
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="verify-banner" aria-label="Email address not verified">
      <p>
        <strong>Verify your email address.</strong> We emailed a link to {me.data.email}. Until you open it, you cannot create API tokens or invite anyone, and invitations to other people’s projects wait.
      </p>
      <div className="verify-actions">
        <button type="button" className="secondary small" onClick={() => void resend()} disabled={busy}>
          Resend the email
        </button>
        <span role="status" className="notice-slot">
          {state.sent}
        </span>
        {state.error && (
          <span className="error" role="alert">
            {state.error}
          </span>
        )}
      </div>
    </section>
  );
}

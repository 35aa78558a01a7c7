import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useVerifyEmail } from '../../api/account';
import { session } from '../../api/session';
import { AccountFrame } from './AccountFrame';
import { FormError } from '../../components/FormError';

/**
 * The page the emailed link opens: /verify-email?token=… Verifying takes a press of the button,
 * not the page load: mail scanners that open links must not verify an account for someone who
 * never asked (the address's owner decides).
 */
export function VerifyEmailPage() {
  const [params] = useSearchParams();
  const token = params.get('token') ?? '';
  const verifyEmail = useVerifyEmail();
  const [state, setState] = useState<{ done?: boolean; error?: string }>({});
  const [busy, setBusy] = useState(false);
  const signedIn = session.token() !== null;

  const verify = async () => {
    setBusy(true);
    try {
      await verifyEmail.mutateAsync(token);
      setState({ done: true });
    } catch (error) {
      setState({ error: (error as Error).message });
    } finally {
      setBusy(false);
    }
  };

  const onward = signedIn ? <Link to="/">Go to your projects</Link> : <Link to="/login">Log in</Link>;
  if (!token) {
    return (
      <AccountFrame title="Verify your email address" footer={onward}>
        <FormError message="This link has no verification token. Open the link from the email again, or ask for a new one from your account page." />
      </AccountFrame>
    );
  }
  return (
    <AccountFrame title="Verify your email address" footer={onward}>
      {state.done ? (
        <p className="notice" role="status">
          Your email address is verified. Invitations sent to it are now yours. {onward}.
        </p>
      ) : (
        <>
          <p>Confirm that this address is yours. If you did not create a Guidon account, close this page: nothing happens.</p>
          <FormError message={state.error && `${state.error}. ${signedIn ? 'Ask for a new link from your account page.' : 'Log in to ask for a new link.'}`} />
          <button type="button" onClick={() => void verify()} disabled={busy}>
            Verify my email address
          </button>
        </>
      )}
    </AccountFrame>
  );
}

import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { useForgotPassword } from '../../api/account';
import { Field } from '../../components/Field';
import { AccountFrame } from './AccountFrame';

export function ForgotPasswordPage() {
  const [email, setEmail] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [sent, setSent] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const forgot = useForgotPassword();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!email.trim()) return setError('Enter the email you signed up with');
    setError(null);
    setBusy(true);
    try {
      const answer = await forgot.mutateAsync(email.trim());
      setSent(answer.message);
    } catch (caught) {
      setError((caught as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <AccountFrame title="Reset your password" footer={<Link to="/login">Back to log in</Link>}>
      {sent ? (
        <p className="notice" role="status">
          {sent} Check your inbox for a link; it works once, for a limited time.
        </p>
      ) : (
        <form onSubmit={submit} noValidate>
          <p>We will email you a link to choose a new password.</p>
          <Field label="Email" type="email" autoComplete="email" value={email} onChange={setEmail} error={error} required />
          <button type="submit" disabled={busy}>
            Send reset link
          </button>
        </form>
      )}
    </AccountFrame>
  );
}

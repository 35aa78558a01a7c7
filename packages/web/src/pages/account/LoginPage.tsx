import { useState, type FormEvent } from 'react';
import { Link, Navigate, useNavigate, useSearchParams } from 'react-router';
import { useLogIn } from '../../api/account';
import { session } from '../../api/session';
import { Field } from '../../components/Field';
import { AccountFrame, safeNext } from './AccountFrame';
import { FormError } from '../../components/FormError';

export function LoginPage() {
  const [params] = useSearchParams();
  const next = safeNext(params.get('next'));
  const navigate = useNavigate();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [errors, setErrors] = useState<{ email?: string; password?: string; form?: string }>({});
  const [busy, setBusy] = useState(false);
  const logIn = useLogIn();
  if (session.token()) return <Navigate to={next} replace />;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const found = { email: email.trim() ? undefined : 'Enter your email', password: password ? undefined : 'Enter your password' };
    setErrors(found);
    if (found.email || found.password) return;
    setBusy(true);
    try {
      await logIn.mutateAsync({ email: email.trim(), password });
      navigate(next, { replace: true });
    } catch (error) {
      setErrors({ form: (error as Error).message });
    } finally {
      setBusy(false);
    }
  };

  return (
    <AccountFrame
      title="Log in"
      footer={
        <>
          <Link to="/forgot-password">Forgot your password?</Link>
          <span>
            New here? <Link to={`/signup${next !== '/' ? `?next=${encodeURIComponent(next)}` : ''}`}>Create an account</Link>
          </span>
        </>
      }
    >
      {params.has('next') && next !== '/' && <p className="notice">Your session ended. Log in to go back where you were.</p>}
      <form onSubmit={submit} noValidate>
        <Field label="Email" type="email" autoComplete="email" value={email} onChange={setEmail} error={errors.email} required />
        <Field label="Password" type="password" autoComplete="current-password" value={password} onChange={setPassword} error={errors.password} required />
        <FormError message={errors.form} />
        <button type="submit" disabled={busy}>
          Log in
        </button>
      </form>
    </AccountFrame>
  );
}

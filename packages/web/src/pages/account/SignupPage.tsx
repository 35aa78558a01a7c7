import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { api, unwrap } from '../../api/client';
import { fields } from '../../api/fields';
import { session } from '../../api/session';
import { Field } from '../../components/Field';
import { AccountFrame, safeNext } from './AccountFrame';

export function SignupPage() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  // An invitation link carries the invited address: /register?email=…
  const [email, setEmail] = useState(params.get('email') ?? '');
  const [password, setPassword] = useState('');
  const [errors, setErrors] = useState<{ email?: string; password?: string; form?: string }>({});
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const found = {
      email: /^\S+@\S+\.\S+$/.test(email.trim()) ? undefined : 'Enter an email address such as ada@example.com',
      password: password.length >= fields.password.minLength ? undefined : `Use at least ${fields.password.minLength} characters`,
    };
    setErrors(found);
    if (found.email || found.password) return;
    setBusy(true);
    try {
      await unwrap(api.POST('/auth/register', { body: { email: email.trim(), password } }));
      const { token } = await unwrap(api.POST('/auth/login', { body: { email: email.trim(), password } }));
      session.signIn(token);
      navigate(safeNext(params.get('next')), { replace: true });
    } catch (error) {
      setErrors({ form: (error as Error).message });
    } finally {
      setBusy(false);
    }
  };

  return (
    <AccountFrame title="Create your account" footer={<span>Have an account? <Link to="/login">Log in</Link></span>}>
      {params.get('email') && <p className="notice">You were invited to a project: sign up with this address and it is yours at once.</p>}
      <form onSubmit={submit} noValidate>
        <Field label="Email" type="email" autoComplete="email" value={email} onChange={setEmail} error={errors.email} required />
        <Field
          label="Password"
          type="password"
          autoComplete="new-password"
          value={password}
          onChange={setPassword}
          error={errors.password}
          hint={`At least ${fields.password.minLength} characters.`}
          required
        />
        {errors.form && (
          <p className="error" role="alert">
            {errors.form}
          </p>
        )}
        <button type="submit" disabled={busy}>
          Sign up
        </button>
      </form>
    </AccountFrame>
  );
}

import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { useSignUp } from '../../api/account';
import { ApiError } from '../../api/client';
import { fields } from '../../api/fields';
import { Field } from '../../components/Field';
import { AccountFrame, safeNext } from './AccountFrame';
import { FormError } from '../../components/FormError';

export function SignupPage() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  // An invitation link carries its secret (/register?invitation=…): signing up with it proves the
  // address the invitation was sent to, which the person types (the link does not carry it).
  const invitation = params.get('invitation');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  // taken: the address has an account already (409), which may be someone else's claim on it.
  const [errors, setErrors] = useState<{ email?: string; password?: string; form?: string; taken?: boolean }>({});
  const [busy, setBusy] = useState(false);
  const signUp = useSignUp();

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
      await signUp.mutateAsync({ email: email.trim(), password, invitation });
      navigate(safeNext(params.get('next')), { replace: true });
    } catch (error) {
      setErrors({ form: (error as Error).message, taken: error instanceof ApiError && error.status === 409 });
    } finally {
      setBusy(false);
    }
  };

  return (
    <AccountFrame title="Create your account" footer={<span>Have an account? <Link to="/login">Log in</Link></span>}>
      {invitation && <p className="notice">You were invited to a project: sign up with the address the invitation was sent to, and you join it at once.</p>}
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
        <FormError message={errors.form}>
          {errors.taken && (
            <>
              . <Link to="/login">Log in</Link> instead; if you never created this account, <Link to="/forgot-password">reset its password</Link>: the emailed link proves the address is yours and ends every other session.
            </>
          )}
        </FormError>
        <button type="submit" disabled={busy}>
          Sign up
        </button>
      </form>
    </AccountFrame>
  );
}

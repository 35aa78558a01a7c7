import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Link, Navigate, useNavigate, useSearchParams } from 'react-router';
import { useFinishSignIn, useLogIn } from '../../api/account';
import { useSignInOptions } from '../../api/queries';
import { session } from '../../api/session';
import { Field } from '../../components/Field';
import { AccountFrame, safeNext } from './AccountFrame';
import { FormError } from '../../components/FormError';

export function LoginPage() {
  const [params] = useSearchParams();
  const next = safeNext(params.get('next'));
  const navigate = useNavigate();
  const options = useSignInOptions();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [errors, setErrors] = useState<{ email?: string; password?: string; form?: string }>({});
  const [busy, setBusy] = useState(false);
  const logIn = useLogIn();
  const finishSignIn = useFinishSignIn();
  const handedOff = useRef(false);
  const finishingSso = params.get('sso') === 'done';

  // Back from the OpenID provider: the server left this browser's login token for it to take, once.
  useEffect(() => {
    if (!finishingSso || handedOff.current || session.token()) return;
    handedOff.current = true;
    finishSignIn
      .mutateAsync()
      .then(() => navigate(next, { replace: true }))
      .catch((error: Error) => setErrors({ form: `Signing in did not finish: ${error.message}. Try again.` }));
  }, [finishingSso, next, navigate, finishSignIn]);

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

  const oidc = options.data?.oidc;
  // Until the server says otherwise, the password form shows (it answers 403 itself when turned off).
  const passwords = options.data?.password ?? true;
  const ssoHref = oidc ? `${oidc.login_url}${next !== '/' ? `?next=${encodeURIComponent(next)}` : ''}` : '';

  return (
    <AccountFrame
      title="Log in"
      footer={
        passwords && (
          <>
            <Link to="/forgot-password">Forgot your password?</Link>
            <span>
              New here? <Link to={`/signup${next !== '/' ? `?next=${encodeURIComponent(next)}` : ''}`}>Create an account</Link>
            </span>
          </>
        )
      }
    >
      {params.has('next') && next !== '/' && !finishingSso && <p className="notice">Your session ended. Log in to go back where you were.</p>}
      {params.get('account') === 'deleted' && (
        <p className="notice" role="status">
          Your account was deleted.
        </p>
      )}
      {finishingSso && !errors.form && <p role="status">Finishing signing in…</p>}
      {oidc && (
        <p>
          <a className="button sso" href={ssoHref}>
            Sign in with {oidc.name}
          </a>
        </p>
      )}
      {oidc && passwords && <p className="muted or">or with your email and password</p>}
      {!passwords && <FormError message={errors.form} />}
      {passwords && (
        <form onSubmit={submit} noValidate>
          <Field label="Email" type="email" autoComplete="email" value={email} onChange={setEmail} error={errors.email} required />
          <Field label="Password" type="password" autoComplete="current-password" value={password} onChange={setPassword} error={errors.password} required />
          <FormError message={errors.form} />
          <button type="submit" disabled={busy}>
            Log in
          </button>
        </form>
      )}
    </AccountFrame>
  );
}

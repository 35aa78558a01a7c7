import { useState, type FormEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useResetPassword } from '../../api/account';
import { fields } from '../../api/fields';
import { Field } from '../../components/Field';
import { AccountFrame } from './AccountFrame';
import { FormError } from '../../components/FormError';

/** The page the emailed link opens: /reset-password?token=… */
export function ResetPasswordPage() {
  const [params] = useSearchParams();
  const token = params.get('token') ?? '';
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const [errors, setErrors] = useState<{ password?: string; repeat?: string; form?: string }>({});
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);
  const reset = useResetPassword();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const found = {
      password: password.length >= fields.password.minLength ? undefined : `Use at least ${fields.password.minLength} characters`,
      repeat: repeat === password ? undefined : 'The two passwords differ',
    };
    setErrors(found);
    if (found.password || found.repeat) return;
    setBusy(true);
    try {
      await reset.mutateAsync({ token, newPassword: password });
      setDone(true);
    } catch (error) {
      setErrors({ form: (error as Error).message });
    } finally {
      setBusy(false);
    }
  };

  if (!token) {
    return (
      <AccountFrame title="Choose a new password" footer={<Link to="/forgot-password">Ask for a new link</Link>}>
        <FormError message="This link has no reset token. Open the link from the email again, or ask for a new one." />
      </AccountFrame>
    );
  }
  return (
    <AccountFrame title="Choose a new password" footer={<Link to="/login">Back to log in</Link>}>
      {done ? (
        <p className="notice" role="status">
          Your password is changed. <Link to="/login">Log in with it</Link>.
        </p>
      ) : (
        <form onSubmit={submit} noValidate>
          <Field label="New password" type="password" autoComplete="new-password" value={password} onChange={setPassword} error={errors.password} hint={`At least ${fields.password.minLength} characters.`} />
          <Field label="Repeat the new password" type="password" autoComplete="new-password" value={repeat} onChange={setRepeat} error={errors.repeat} />
          <FormError message={errors.form} />
          <button type="submit" disabled={busy}>
            Change password
          </button>
        </form>
      )}
    </AccountFrame>
  );
}

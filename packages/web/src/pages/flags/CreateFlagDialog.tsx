import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import type { Environment } from '../../api/client';
import { fields } from '../../api/fields';
import { useCreateFlag } from '../../api/flags';
import { isDrafted } from '../../api/drafts';
import { Field } from '../../components/Field';
import { Modal } from '../../components/Modal';
import { FormError } from '../../components/FormError';

const keyPattern = new RegExp(fields.flagKey.pattern);
const suggestKey = (name: string) => name.trim().toLowerCase().replace(/[^a-z0-9_-]+/g, '_').replace(/^[^a-z]+|_+$/g, '');

/** The server's key rule, checked before submit in its own words. */
export function flagKeyError(key: string): string | undefined {
  if (!key) return 'Enter a key';
  if (key.length > fields.flagKey.maxLength) return `At most ${fields.flagKey.maxLength} characters`;
  if (!keyPattern.test(key)) return `The key allows ${fields.flagKey.description.replace(/; unique.*$/, '')}`;
  return undefined;
}

export function CreateFlagDialog({ projectId, environments, open, onOpenChange }: { projectId: string; environments: Environment[]; open: boolean; onOpenChange: (open: boolean) => void }) {
  const create = useCreateFlag(projectId);
  const navigate = useNavigate();
  const [envId, setEnvId] = useState(environments[0]?.id ?? '');
  const [name, setName] = useState('');
  const [key, setKey] = useState('');
  const [keyTouched, setKeyTouched] = useState(false);
  const [description, setDescription] = useState('');
  const [errors, setErrors] = useState<{ name?: string; key?: string; form?: string }>({});
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const found = { name: name.trim() ? undefined : 'Give the flag a name', key: flagKeyError(key) };
    setErrors(found);
    if (found.name || found.key) return;
    setBusy(true);
    try {
      const flag = await create.mutateAsync({ envId, name: name.trim(), key, description: description.trim() || null });
      onOpenChange(false);
      setName('');
      setKey('');
      setKeyTouched(false);
      setDescription('');
      // In an environment that needs approval the new flag waits in the draft change request.
      navigate(isDrafted(flag) ? `/projects/${projectId}/change-requests` : `/projects/${projectId}/flags/${envId}/${flag.id}`);
    } catch (error) {
      const message = (error as Error).message;
      setErrors(message.includes('key') ? { key: message } : { form: message });
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal open={open} onOpenChange={onOpenChange} title="New flag" description="It starts off, at 0% rollout, in the environment you pick.">
      <form onSubmit={submit} noValidate>
        <div className="field">
          <label htmlFor="new-flag-env">Environment</label>
          <select id="new-flag-env" value={envId} onChange={(event) => setEnvId(event.target.value)}>
            {environments.map((env) => (
              <option key={env.id} value={env.id}>
                {env.name}
              </option>
            ))}
          </select>
        </div>
        <Field
          label="Name"
          value={name}
          onChange={(value) => {
            setName(value);
            if (!keyTouched) setKey(suggestKey(value));
          }}
          error={errors.name}
          maxLength={200}
          autoFocus
        />
        <Field
          label="Key"
          value={key}
          onChange={(value) => {
            setKey(value);
            setKeyTouched(true);
          }}
          error={errors.key}
          hint={`What apps ask for: ${fields.flagKey.description}.`}
          maxLength={fields.flagKey.maxLength}
          autoComplete="off"
        />
        <Field label="Description (optional)" value={description} onChange={setDescription} multiline maxLength={2000} />
        <FormError message={errors.form} />
        <div className="actions">
          <button type="button" className="secondary" onClick={() => onOpenChange(false)}>
            Cancel
          </button>
          <button type="submit" disabled={busy}>
            Create flag
          </button>
        </div>
      </form>
    </Modal>
  );
}

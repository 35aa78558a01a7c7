import { useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router';
import type { Environment } from '../../api/client';
import { useCreateEnvironment, useDeleteEnvironment, useRenameEnvironment, useSetApprovals } from '../../api/environments';
import { fields } from '../../api/fields';
import { useEnvironments } from '../../api/queries';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { Field } from '../../components/Field';
import { Modal } from '../../components/Modal';
import { QueryState } from '../../components/States';
import { useRole } from '../../api/roles';
import { RoleNote } from '../../components/RoleNote';
import { FormError } from '../../components/FormError';

const keyPattern = new RegExp(fields.environmentKey.pattern);
export const suggestKey = (name: string) => name.trim().toLowerCase().replace(/[^a-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '');

export function EnvironmentsPage() {
  const { projectId = '' } = useParams();
  const environments = useEnvironments(projectId);
  const remove = useDeleteEnvironment(projectId);
  const [renaming, setRenaming] = useState<Environment | null>(null);
  const [deleting, setDeleting] = useState<Environment | null>(null);
  const { can } = useRole(projectId);
  const canEdit = can('editor');
  const setApprovals = useSetApprovals(projectId);
  const [approvalsError, setApprovalsError] = useState<string | null>(null);
  // The number just chosen, per environment, shown until the save and the refetch are done: the
  // select would otherwise snap back to the stored number meanwhile, and a second key press
  // would start from there.
  const [chosen, setChosen] = useState<Record<string, number>>({});
  const changeApprovals = async (env: Environment, approvals_required: number) => {
    setApprovalsError(null);
    setChosen((now) => ({ ...now, [env.id]: approvals_required }));
    try {
      await setApprovals.mutateAsync({ envId: env.id, approvals_required });
    } catch (error) {
      setApprovalsError(`${env.name} not changed: ${(error as Error).message}`);
    } finally {
      // A later choice made while this one saved stays shown.
      setChosen(({ [env.id]: last, ...others }) => (last === approvals_required ? others : { ...others, [env.id]: last! }));
    }
  };

  return (
    <div className="stack">
      {!canEdit && <RoleNote need="editor" what="add, rename or delete environments" />}
      <QueryState query={environments} what="environments">
        {(list) => (
          <section className="panel">
            <h2>Environments</h2>
            <p className="muted small">
              An environment that needs approvals takes changes to its flags, rules and schedules only through <Link to={`/projects/${projectId}/change-requests`}>change requests</Link> that other members approved. Owners set how many.
            </p>
            <FormError message={approvalsError} />
            {list.length === 0 ? (
              <p>No environments: add one below, then create flags in it.</p>
            ) : (
              <ul className="rows">
                {list.map((env) => (
                  <li key={env.id} className="row">
                    <div>
                      <strong>{env.name}</strong> <code>{env.key}</code>
                      {env.approvals_required > 0 && !can('owner') && <span className="badge role">needs {env.approvals_required === 1 ? '1 approval' : `${env.approvals_required} approvals`}</span>}
                    </div>
                    {can('owner') && (
                      <div className="row-actions approvals">
                        <label htmlFor={`approvals-${env.id}`}>
                          Approvals needed<span className="visually-hidden"> for changes to {env.name}</span>
                        </label>
                        <select id={`approvals-${env.id}`} value={chosen[env.id] ?? env.approvals_required} onChange={(event) => void changeApprovals(env, Number(event.target.value))}>
                          {[0, 1, 2, 3, 4, 5].map((count) => (
                            <option key={count} value={count}>
                              {count === 0 ? 'None' : count}
                            </option>
                          ))}
                        </select>
                      </div>
                    )}
                    {canEdit && (
                      <div className="row-actions">
                        <button type="button" className="secondary small" onClick={() => setRenaming(env)} aria-label={`Rename ${env.name}`}>
                          Rename
                        </button>
                        <button type="button" className="danger small" onClick={() => setDeleting(env)} aria-label={`Delete ${env.name}`}>
                          Delete
                        </button>
                      </div>
                    )}
                  </li>
                ))}
              </ul>
            )}
          </section>
        )}
      </QueryState>
      {canEdit && <CreateEnvironment projectId={projectId} />}
      {renaming && <RenameEnvironment projectId={projectId} environment={renaming} onClose={() => setRenaming(null)} />}
      <ConfirmDialog
        open={deleting !== null}
        onOpenChange={(open) => !open && setDeleting(null)}
        title={`Delete ${deleting?.name ?? ''}?`}
        description="Its flags, their targeting rules and its evaluation history are deleted with it. Apps asking for this environment get 404."
        confirmLabel="Delete environment"
        onConfirm={async () => {
          if (!deleting) return;
          await remove.mutateAsync(deleting.id);
        }}
      />
    </div>
  );
}

function CreateEnvironment({ projectId }: { projectId: string }) {
  const create = useCreateEnvironment(projectId);
  const [name, setName] = useState('');
  const [key, setKey] = useState('');
  const [keyTouched, setKeyTouched] = useState(false);
  const [errors, setErrors] = useState<{ name?: string; key?: string; form?: string }>({});

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const found = {
      name: name.trim() ? undefined : 'Give the environment a name',
      key: keyPattern.test(key) && key.length <= (fields.environmentKey.maxLength ?? 64) ? undefined : `The key allows ${fields.environmentKey.description}`,
    };
    setErrors(found);
    if (found.name || found.key) return;
    try {
      await create.mutateAsync({ name: name.trim(), key });
      setName('');
      setKey('');
      setKeyTouched(false);
    } catch (error) {
      const message = (error as Error).message;
      setErrors(message.includes('key') ? { key: message } : { form: message });
    }
  };

  return (
    <section className="panel">
      <h2>New environment</h2>
      <form onSubmit={submit} noValidate className="inline-form">
        <Field
          label="Name"
          value={name}
          onChange={(value) => {
            setName(value);
            if (!keyTouched) setKey(suggestKey(value));
          }}
          error={errors.name}
          maxLength={200}
        />
        <Field
          label="Key"
          value={key}
          onChange={(value) => {
            setKey(value);
            setKeyTouched(true);
          }}
          error={errors.key}
          hint={`Used by apps to name the environment. ${fields.environmentKey.description}; it never changes.`}
          maxLength={fields.environmentKey.maxLength}
        />
        <FormError message={errors.form} />
        <div className="actions start">
          <button type="submit">Add environment</button>
        </div>
      </form>
    </section>
  );
}

function RenameEnvironment({ projectId, environment, onClose }: { projectId: string; environment: Environment; onClose: () => void }) {
  const rename = useRenameEnvironment(projectId);
  const [name, setName] = useState(environment.name);
  const [error, setError] = useState<string | null>(null);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!name.trim()) return setError('An environment needs a name');
    try {
      await rename.mutateAsync({ envId: environment.id, name: name.trim() });
      onClose();
    } catch (caught) {
      setError((caught as Error).message);
    }
  };
  return (
    <Modal open onOpenChange={(open) => !open && onClose()} title={`Rename ${environment.name}`} description={`The key ${environment.key} stays the same.`}>
      <form onSubmit={submit} noValidate>
        <Field label="Name" value={name} onChange={setName} error={error} maxLength={200} autoFocus />
        <div className="actions">
          <button type="button" className="secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="submit">Rename</button>
        </div>
      </form>
    </Modal>
  );
}

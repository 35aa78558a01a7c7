import { useEffect, useState, type FormEvent } from 'react';
import { useNavigate, useParams } from 'react-router';
import type { Project } from '../../api/client';
import { useDeleteProject, useRotateSdkKey, useUpdateProject } from '../../api/projects';
import { useProject } from '../../api/queries';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { CopyButton } from '../../components/CopyButton';
import { Field } from '../../components/Field';
import { QueryState } from '../../components/States';
import { reasonFor } from '../../api/roles';
import { RoleNote } from '../../components/RoleNote';
import { FormError } from '../../components/FormError';
import { FlagsAsCode } from './FlagsAsCode';

export function ProjectSettingsPage() {
  const { projectId = '' } = useParams();
  const project = useProject(projectId);
  return <QueryState query={project} what="the project">{(data) => <Settings project={data} />}</QueryState>;
}

function Settings({ project }: { project: Project }) {
  const update = useUpdateProject(project.id);
  const rotate = useRotateSdkKey(project.id);
  const navigate = useNavigate();
  const remove = useDeleteProject(project.id, () => navigate('/', { replace: true, flushSync: true }));
  const [name, setName] = useState(project.name);
  const [description, setDescription] = useState(project.description ?? '');
  const [errors, setErrors] = useState<{ name?: string; form?: string }>({});
  const [saved, setSaved] = useState(false);
  const [shown, setShown] = useState(false);
  const [rotating, setRotating] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const isOwner = project.role === 'owner';
  useEffect(() => {
    setName(project.name);
    setDescription(project.description ?? '');
  }, [project.name, project.description]);

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    if (!name.trim()) return setErrors({ name: 'A project needs a name' });
    setErrors({});
    try {
      await update.mutateAsync({ name: name.trim(), description: description.trim() || null });
      setSaved(true);
    } catch (error) {
      setErrors({ form: (error as Error).message });
    }
  };

  return (
    <div className="stack">
      {!isOwner && <RoleNote need="owner" what="rename or delete the project, or rotate its SDK key" />}
      <section className="panel">
        <h2>Name and description</h2>
        <form onSubmit={save} noValidate>
          <fieldset className="plain" disabled={!isOwner}>
            <Field label="Project name" value={name} onChange={setName} error={errors.name} maxLength={200} />
            <Field label="Description" value={description} onChange={setDescription} multiline maxLength={2000} />
            <FormError message={errors.form} />
            <div className="actions start">
              <button type="submit" title={isOwner ? undefined : reasonFor('owner')}>Save</button>
              <span role="status" className="muted">
                {saved ? 'Saved' : ''}
              </span>
            </div>
          </fieldset>
        </form>
      </section>

      <section className="panel">
        <h2>SDK key</h2>
        <p className="muted">Applications send it as X-SDK-Key to evaluate this project's flags.</p>
        <div className="key-row">
          <code className="secret" aria-label="SDK key">
            {shown ? project.sdk_key : `${project.sdk_key.slice(0, 8)}${'•'.repeat(16)}`}
          </code>
          <button type="button" className="secondary small" onClick={() => setShown(!shown)} aria-pressed={shown}>
            {shown ? 'Hide key' : 'Show key'}
          </button>
          <CopyButton text={project.sdk_key} label="Copy the SDK key" />
        </div>
        {isOwner && (
          <button type="button" className="secondary" onClick={() => setRotating(true)}>
            Rotate SDK key
          </button>
        )}
      </section>

      <FlagsAsCode project={project} />

      {isOwner && (
        <section className="panel danger-zone">
          <h2>Delete this project</h2>
          <p>Its environments, flags, targeting rules and evaluation history are deleted with it.</p>
          <button type="button" className="danger" onClick={() => setDeleting(true)}>
            Delete project
          </button>
        </section>
      )}

      <ConfirmDialog
        open={rotating}
        onOpenChange={setRotating}
        title="Rotate the SDK key?"
        description="A new key replaces the current one. The old key stops working at once: every app that uses it gets 401 until it has the new key."
        confirmLabel="Rotate key"
        onConfirm={async () => {
          await rotate.mutateAsync();
          setShown(true);
        }}
      />
      <ConfirmDialog
        open={deleting}
        onOpenChange={setDeleting}
        title={`Delete ${project.name}?`}
        description="This deletes the project with all its environments, flags, targeting rules and evaluation history. Apps using its SDK key stop getting flags. It cannot be undone."
        confirmLabel="Delete project"
        typeToConfirm={project.name}
        onConfirm={() => remove.mutateAsync()}
      />
    </div>
  );
}

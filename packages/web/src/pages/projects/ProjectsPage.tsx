import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { useCreateProject } from '../../api/projects';
import { useProjects } from '../../api/queries';
import { Field } from '../../components/Field';
import { Modal } from '../../components/Modal';
import { Empty, QueryState } from '../../components/States';
import { FormError } from '../../components/FormError';
import { Invitations } from './Invitations';

export function ProjectsPage() {
  const projects = useProjects();
  const [creating, setCreating] = useState(false);
  return (
    <section>
      <div className="page-head">
        <h1 id="projects-title" tabIndex={-1}>
          Projects
        </h1>
        <button type="button" onClick={() => setCreating(true)}>
          New project
        </button>
      </div>
      <Invitations focusAfterLast="projects-title" />
      <QueryState query={projects} what="your projects">
        {(list) =>
          list.length === 0 ? (
            <Empty title="No projects yet" level={2}>
              <p>A project holds the flags of one application. It starts with two environments, Production and Staging, and an SDK key for your app.</p>
              <button type="button" onClick={() => setCreating(true)}>
                Create your first project
              </button>
            </Empty>
          ) : (
            <ul className="cards">
              {list.map((project) => (
                <li key={project.id} className="card">
                  <h2>
                    <Link to={`/projects/${project.id}`}>{project.name}</Link>
                  </h2>
                  <p className="muted">{project.description || 'No description'}</p>
                </li>
              ))}
            </ul>
          )
        }
      </QueryState>
      <CreateProjectDialog open={creating} onOpenChange={setCreating} />
    </section>
  );
}

function CreateProjectDialog({ open, onOpenChange }: { open: boolean; onOpenChange: (open: boolean) => void }) {
  const create = useCreateProject();
  const navigate = useNavigate();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [errors, setErrors] = useState<{ name?: string; form?: string }>({});
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!name.trim()) return setErrors({ name: 'Give the project a name' });
    setErrors({});
    setBusy(true);
    try {
      const project = await create.mutateAsync({ name: name.trim(), description: description.trim() || null });
      onOpenChange(false);
      setName('');
      setDescription('');
      navigate(`/projects/${project.id}`);
    } catch (error) {
      setErrors({ form: (error as Error).message });
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal open={open} onOpenChange={onOpenChange} title="New project" description="It comes with Production and Staging environments and an SDK key.">
      <form onSubmit={submit} noValidate>
        <Field label="Name" value={name} onChange={setName} error={errors.name} maxLength={200} autoFocus />
        <Field label="Description (optional)" value={description} onChange={setDescription} multiline maxLength={2000} />
        <FormError message={errors.form} />
        <div className="actions">
          <button type="button" className="secondary" onClick={() => onOpenChange(false)}>
            Cancel
          </button>
          <button type="submit" disabled={busy}>
            Create project
          </button>
        </div>
      </form>
    </Modal>
  );
}

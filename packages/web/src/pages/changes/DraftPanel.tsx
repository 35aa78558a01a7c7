import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import type { Environment } from '../../api/client';
import { useChangeRequestMutations } from '../../api/changeRequests';
import { drafts, useDraft } from '../../api/drafts';
import { Field } from '../../components/Field';
import { FormError } from '../../components/FormError';
import { plural } from '../../components/time';
import { describeChange } from './describe';

/**
 * The draft change request of an environment that needs approval: the edits collected so far,
 * each removable, sent as one request ("Request changes") that others review.
 */
export function DraftPanel({ projectId, environment, headingLevel = 3 }: { projectId: string; environment: Environment; headingLevel?: 2 | 3 }) {
  const items = useDraft(projectId, environment.id);
  const { submit } = useChangeRequestMutations(projectId);
  const navigate = useNavigate();
  const [title, setTitle] = useState('');
  const [description, setDescription] = useState('');
  const [errors, setErrors] = useState<{ title?: string; form?: string }>({});
  const Heading = headingLevel === 2 ? 'h2' : 'h3';
  if (items.length === 0) return null;

  const send = async (event: FormEvent) => {
    event.preventDefault();
    if (!title.trim()) return setErrors({ title: 'Give the request a title: what it does and why' });
    setErrors({});
    try {
      const request = await submit.mutateAsync({ envId: environment.id, title: title.trim(), description: description.trim() || null, items });
      navigate(`/projects/${projectId}/change-requests/${request.id}`);
    } catch (error) {
      setErrors({ form: `Not sent: ${(error as Error).message}` });
    }
  };

  return (
    <section className="panel draft" aria-label={`Draft change request for ${environment.name}`}>
      <Heading>
        Draft change request for {environment.name} <span className="badge role">{plural(items.length, 'change')}</span>
      </Heading>
      <p className="muted small">
        Nothing here is applied yet. Send it, and once {environment.approvals_required > 1 ? `${environment.approvals_required} other members approve` : 'another member approves'} it, it can be applied.
      </p>
      <ol className="rows" aria-label={`Changes in the draft for ${environment.name}`}>
        {items.map((item) => (
          <li key={item.id} className="row">
            <span>{describeChange(item.change, item.subject)}</span>
            <button type="button" className="secondary small" onClick={() => drafts.remove(projectId, environment.id, item.id)} aria-label={`Remove from the draft: ${describeChange(item.change, item.subject)}`}>
              Remove
            </button>
          </li>
        ))}
      </ol>
      <form onSubmit={send} noValidate>
        <Field label="Title of the request" value={title} onChange={setTitle} error={errors.title} maxLength={200} />
        <Field label="Why (for the reviewers)" value={description} onChange={setDescription} multiline maxLength={2000} />
        <FormError message={errors.form} />
        <div className="actions start">
          <button type="submit" disabled={submit.isPending}>
            Request changes
          </button>
          <button type="button" className="secondary" onClick={() => drafts.clear(projectId, environment.id)}>
            Discard the draft
          </button>
        </div>
      </form>
    </section>
  );
}

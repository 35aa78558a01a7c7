import { useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router';
import type { Condition, Environment, Segment } from '../../api/client';
import { useEnvironments, useProjectSeenAttributes, useSegments } from '../../api/queries';
import { useSegmentMutations, type SegmentBody } from '../../api/segments';
import { useRole } from '../../api/roles';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { Field } from '../../components/Field';
import { DialogActions } from '../../components/DialogActions';
import { Modal } from '../../components/Modal';
import { useDialogSave } from '../../components/useDialogSave';
import { RoleNote } from '../../components/RoleNote';
import { Empty, QueryState } from '../../components/States';
import { flagKeyError } from '../flags/CreateFlagDialog';
import { ConditionsEditor } from './ConditionsEditor';
import { blankCondition, conditionsSentence, toBody } from './conditions';

/** A project's segments: named condition sets its rules name with "is in segment", in every environment. */
export function SegmentsPage() {
  const { projectId = '' } = useParams();
  const segments = useSegments(projectId);
  const environments = useEnvironments(projectId);
  const { can } = useRole(projectId);
  const canEdit = can('editor');
  const [editing, setEditing] = useState<Segment | 'new' | null>(null);
  const [deleting, setDeleting] = useState<Segment | null>(null);
  const write = useSegmentMutations(projectId);
  const seenAttributes = useProjectSeenAttributes(projectId, (environments.data ?? []).map((env) => env.id));

  return (
    <div className="stack">
      <div className="page-head">
        <h2>Segments</h2>
        {canEdit && (
          <button type="button" onClick={() => setEditing('new')}>
            New segment
          </button>
        )}
      </div>
      <p className="muted">A segment names a group of users by conditions (“beta customers”, “office network”); a rule in any environment targets it with the condition “is in segment”. Changing a segment changes every rule that uses it.</p>
      {!canEdit && <RoleNote need="editor" what="create or change segments" />}
      {(environments.data ?? []).some((env) => env.approvals_required > 0) && (
        <p className="notice">Segments belong to the whole project: a change to one reaches the rules that use it in every environment at once, without a change request, also where changes need approval.</p>
      )}
      <QueryState query={segments} what="segments">
        {(list) =>
          list.length === 0 ? (
            <Empty title="No segments yet">
              <p>Describe a group once, such as everyone whose plan is beta, and target it from any flag’s rules.</p>
            </Empty>
          ) : (
            <div className="table-wrap">
              <table className="plain list">
                <caption className="visually-hidden">Segments of this project</caption>
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">Name</th>
                    <th scope="col">Conditions</th>
                    <th scope="col">Used by</th>
                    {canEdit && <th scope="col">Actions</th>}
                  </tr>
                </thead>
                <tbody>
                  {list.map((segment) => (
                    <tr key={segment.id}>
                      <th scope="row">
                        <code>{segment.key}</code>
                      </th>
                      <td data-label="Name">
                        {segment.name}
                        {segment.description && <span className="muted small block">{segment.description}</span>}
                      </td>
                      <td data-label="Conditions">{conditionsSentence(segment.conditions)}</td>
                      <td data-label="Used by">
                        <UsedBy projectId={projectId} segment={segment} environments={environments.data ?? []} />
                      </td>
                      {canEdit && (
                        <td>
                          <div className="row-actions">
                            <button type="button" className="secondary small" onClick={() => setEditing(segment)} aria-label={`Edit segment ${segment.key}`}>
                              Edit
                            </button>
                            <button type="button" className="danger small" onClick={() => setDeleting(segment)} aria-label={`Delete segment ${segment.key}`}>
                              Delete
                            </button>
                          </div>
                        </td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </QueryState>
      {editing && (
        <SegmentDialog
          segment={editing === 'new' ? null : editing}
          seenAttributes={seenAttributes}
          onClose={() => setEditing(null)}
          onSave={async (body) => void (editing === 'new' ? await write.create.mutateAsync(body) : await write.update.mutateAsync({ id: editing.id, ...body }))}
        />
      )}
      <ConfirmDialog
        open={deleting !== null}
        onOpenChange={(open) => !open && setDeleting(null)}
        title={`Delete segment ${deleting?.key ?? ''}?`}
        description="Rules can no longer name it. A segment that a rule uses cannot be deleted: remove it from those rules first."
        confirmLabel="Delete segment"
        onConfirm={() => write.remove.mutateAsync(deleting?.id ?? '')}
      />
    </div>
  );
}

function UsedBy({ projectId, segment, environments }: { projectId: string; segment: Segment; environments: Environment[] }) {
  if (segment.used_by.length === 0) return <span className="muted">Not used</span>;
  const envName = (id: string) => environments.find((env) => env.id === id)?.name ?? 'another environment';
  return (
    <ul className="plain-list">
      {segment.used_by.map((use) => (
        <li key={`${use.environment_id}-${use.flag_id}`}>
          <Link to={`/projects/${projectId}/flags/${use.environment_id}/${use.flag_id}`}>
            {use.flag_key} in {envName(use.environment_id)}
          </Link>
        </li>
      ))}
    </ul>
  );
}

function SegmentDialog({ segment, seenAttributes, onClose, onSave }: { segment: Segment | null; seenAttributes: string[]; onClose: () => void; onSave: (body: SegmentBody) => Promise<void> }) {
  const [key, setKey] = useState(segment?.key ?? '');
  const [name, setName] = useState(segment?.name ?? '');
  const [description, setDescription] = useState(segment?.description ?? '');
  const [conditions, setConditions] = useState<Condition[]>(segment?.conditions.length ? segment.conditions : [blankCondition()]);
  const [errors, setErrors] = useState<{ key?: string; name?: string }>({});
  const { busy, error, save } = useDialogSave(onClose);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const found = { key: flagKeyError(key), name: name.trim() ? undefined : 'Give the segment a name' };
    setErrors(found);
    if (found.key || found.name) return;
    await save(() => onSave({ key, name: name.trim(), description: description.trim() || null, conditions: conditions.map(toBody) }));
  };
  return (
    <Modal open onOpenChange={(open) => !open && onClose()} title={segment ? `Edit segment ${segment.key}` : 'New segment'} description="Users are in the segment when every condition holds.">
      <form onSubmit={submit} noValidate>
        <Field label="Name" value={name} onChange={setName} error={errors.name} maxLength={200} placeholder="Beta customers" autoFocus />
        <Field label="Key" value={key} onChange={setKey} error={errors.key} maxLength={100} placeholder="beta" hint="What rules name: a-z, 0-9, _ and -, starting with a letter." />
        <Field label="Description" value={description} onChange={setDescription} multiline maxLength={2000} />
        <ConditionsEditor conditions={conditions} onChange={setConditions} seenAttributes={seenAttributes} seenWhere="in this project" />
        <DialogActions error={error} busy={busy} submitLabel={segment ? 'Save segment' : 'Create segment'} onCancel={onClose} />
      </form>
    </Modal>
  );
}

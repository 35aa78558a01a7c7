import { useState, type FormEvent } from 'react';
import { DndContext, KeyboardSensor, PointerSensor, closestCenter, useSensor, useSensors, type DragEndEvent } from '@dnd-kit/core';
import { SortableContext, arrayMove, sortableKeyboardCoordinates, useSortable, verticalListSortingStrategy } from '@dnd-kit/sortable';
import { CSS } from '@dnd-kit/utilities';
import type { Condition, Flag, Rule, RuleType } from '../../api/client';
import { useRules, useSeenAttributes, useSegments } from '../../api/queries';
import { useRuleMutations, type RuleBody } from '../../api/flags';
import { Field } from '../../components/Field';
import { Modal } from '../../components/Modal';
import { QueryState } from '../../components/States';
import { FormError } from '../../components/FormError';
import { useDialogSave } from '../../components/useDialogSave';
import { DialogActions } from '../../components/DialogActions';
import { ConditionsEditor } from '../targeting/ConditionsEditor';
import { blankCondition, conditionsSentence, ruleSentence, toBody } from '../targeting/conditions';

export const RULE_TYPES: Record<RuleType, { label: string; example: string; help: string }> = {
  user_id: { label: 'User id', example: 'user-42', help: 'Matches the user_id the app sends, exactly.' },
  user_email: { label: 'User email', example: 'ada@example.com', help: 'Matches the user_email the app sends, ignoring case.' },
  email_domain: { label: 'Email domain', example: 'example.com', help: 'Matches every user_email at this domain.' },
  conditions: { label: 'Conditions', example: 'plan is one of beta', help: 'Matches when every condition on the context’s attributes holds.' },
};

/** A rule's name in its buttons' names: its kind and value, or its conditions. */
const ruleName = (rule: Pick<Rule, 'rule_type' | 'rule_value' | 'conditions'>) =>
  rule.rule_type === 'conditions' ? conditionsSentence(rule.conditions ?? []) : `${RULE_TYPES[rule.rule_type].label} ${rule.rule_value}`;

/** Targeting rules in evaluation order (highest priority first); reorder by drag or keyboard. */
export function RulesEditor({ projectId, envId, flag, readOnly = false }: { projectId: string; envId: string; flag: Flag; readOnly?: boolean }) {
  const rules = useRules(projectId, envId, flag.id);
  const write = useRuleMutations(projectId, envId, flag.id);
  const segments = useSegments(projectId);
  const seen = useSeenAttributes(projectId, envId);
  const [editing, setEditingState] = useState<Rule | 'new' | null>(null);
  /** Opening the dialog reads the attribute names again: apps may have sent new ones since the page loaded. */
  const setEditing = (next: Rule | 'new' | null) => {
    if (next !== null) void seen.refetch();
    setEditingState(next);
  };
  const [error, setError] = useState<string | null>(null);
  const sensors = useSensors(useSensor(PointerSensor, { activationConstraint: { distance: 4 } }), useSensor(KeyboardSensor, { coordinateGetter: sortableKeyboardCoordinates }));
  /** A write that refuses says so above the list; the list shows what the server holds either way. */
  const attempt = async (run: () => Promise<unknown>, failure = '') => {
    try {
      await run();
    } catch (caught) {
      setError(`${failure}${(caught as Error).message}`);
    }
  };
  const reorder = (ordered: Rule[]) => {
    setError(null);
    return attempt(() => write.reorder.mutateAsync(ordered), 'The new order was not saved: ');
  };

  const onDragEnd = (list: Rule[]) => (event: DragEndEvent) => {
    const { active, over } = event;
    if (!over || active.id === over.id) return;
    const from = list.findIndex((rule) => rule.id === active.id);
    const to = list.findIndex((rule) => rule.id === over.id);
    void reorder(arrayMove(list, from, to));
  };

  return (
    <section className="panel">
      <div className="page-head">
        <h3>Targeting rules</h3>
        {!readOnly && (
          <button type="button" className="secondary" onClick={() => setEditing('new')}>
            Add rule
          </button>
        )}
      </div>
      <p className="muted small">While the flag is on, the first enabled rule that matches a user (and whose rollout includes them) decides what they get; top first. Drag a rule by its handle, or focus the handle and use Space and the arrow keys.</p>
      <FormError message={error} />
      <QueryState query={rules} what="rules">
        {(list) =>
          list.length === 0 ? (
            <p className="state">No rules: the rollout alone decides. Add a rule to turn the flag on for chosen users or a whole email domain.</p>
          ) : (
            <DndContext
              sensors={sensors}
              collisionDetection={closestCenter}
              onDragEnd={onDragEnd(list)}
              accessibility={{
                screenReaderInstructions: { draggable: 'To reorder a rule, press Space to pick it up, the arrow keys to move it, Space again to drop it, Escape to cancel.' },
              }}
            >
              <SortableContext items={list.map((rule) => rule.id)} strategy={verticalListSortingStrategy}>
                <ol className="rules">
                  {list.map((rule, i) => (
                    <RuleItem
                      key={rule.id}
                      rule={rule}
                      position={i + 1}
                      count={list.length}
                      readOnly={readOnly}
                      onToggle={(enabled) => void attempt(() => write.update.mutateAsync({ id: rule.id, enabled }))}
                      onMove={(delta) => void reorder(arrayMove(list, i, i + delta))}
                      onEdit={() => setEditing(rule)}
                      onDelete={() => void attempt(() => write.remove.mutateAsync(rule.id))}
                    />
                  ))}
                </ol>
              </SortableContext>
            </DndContext>
          )
        }
      </QueryState>
      {editing && (
        <RuleDialog
          rule={editing === 'new' ? null : editing}
          segmentKeys={(segments.data ?? []).map((segment) => segment.key)}
          seenAttributes={(seen.data?.items ?? []).map((item) => item.name)}
          variantKeys={flag.variants.map((variant) => variant.key)}
          onClose={() => setEditing(null)}
          onSave={async (body) => {
            if (editing === 'new') {
              // A new rule goes to the bottom: below the lowest priority there is.
              const lowest = Math.min(0, ...(rules.data ?? []).map((rule) => rule.priority));
              await write.create.mutateAsync({ ...body, priority: (rules.data?.length ?? 0) === 0 ? 0 : lowest - 1 });
            } else {
              await write.update.mutateAsync({ id: editing.id, ...body });
            }
          }}
        />
      )}
    </section>
  );
}

function RuleItem({ rule, position, count, readOnly, onToggle, onMove, onEdit, onDelete }: { rule: Rule; position: number; count: number; readOnly: boolean; onToggle: (enabled: boolean) => void; onMove: (delta: number) => void; onEdit: () => void; onDelete: () => void }) {
  const sortable = useSortable({ id: rule.id, disabled: readOnly });
  const style = { transform: CSS.Transform.toString(sortable.transform), transition: sortable.transition };
  const name = ruleName(rule);
  return (
    <li ref={sortable.setNodeRef} style={style} className={`rule${sortable.isDragging ? ' dragging' : ''}${rule.enabled ? '' : ' disabled'}`}>
      {!readOnly && (
        <button type="button" className="handle" aria-label={`Reorder rule ${position} of ${count}: ${name}`} {...sortable.attributes} {...sortable.listeners}>
          <svg viewBox="0 0 16 16" width="16" height="16" aria-hidden="true">
            <path d="M5 3h2v2H5zM9 3h2v2H9zM5 7h2v2H5zM9 7h2v2H9zM5 11h2v2H5zM9 11h2v2H9z" fill="currentColor" />
          </svg>
        </button>
      )}
      <div className="rule-text">
        <span className="muted small">{RULE_TYPES[rule.rule_type].label}</span>
        <span className="sentence">{ruleSentence(rule)}</span>
      </div>
      {readOnly ? (
        <span className="muted small">{rule.enabled ? 'Enabled' : 'Disabled'}</span>
      ) : (
        <div className="row-actions">
          <label className="checkbox small">
            <input type="checkbox" checked={rule.enabled} onChange={(event) => onToggle(event.target.checked)} aria-label={`Rule ${name} enabled`} /> Enabled
          </label>
          <button type="button" className="secondary small" disabled={position === 1} onClick={() => onMove(-1)} aria-label={`Move ${name} up`}>
            ↑
          </button>
          <button type="button" className="secondary small" disabled={position === count} onClick={() => onMove(1)} aria-label={`Move ${name} down`}>
            ↓
          </button>
          <button type="button" className="secondary small" onClick={onEdit} aria-label={`Edit rule ${name}`}>
            Edit
          </button>
          <button type="button" className="danger small" onClick={onDelete} aria-label={`Delete rule ${name}`}>
            Delete
          </button>
        </div>
      )}
    </li>
  );
}

function RuleDialog({ rule, segmentKeys, seenAttributes, variantKeys, onClose, onSave }: { rule: Rule | null; segmentKeys: string[]; seenAttributes: string[]; variantKeys: string[]; onClose: () => void; onSave: (body: RuleBody) => Promise<void> }) {
  const [type, setType] = useState<RuleType>(rule?.rule_type ?? 'user_id');
  const [value, setValue] = useState(rule?.rule_value ?? '');
  const [conditions, setConditions] = useState<Condition[]>(rule?.conditions?.length ? rule.conditions : [blankCondition()]);
  const [rollout, setRollout] = useState(String(rule?.rollout_percentage ?? 100));
  const [serve, setServe] = useState(rule?.serve ?? true);
  const [enabled, setEnabled] = useState(rule?.enabled ?? true);
  // '' serves a variant by weight; a key pins that variant for the users the rule serves on.
  const [variant, setVariant] = useState(rule?.variant ?? '');
  const variantChoices = variant && !variantKeys.includes(variant) ? [...variantKeys, variant] : variantKeys;
  const [errors, setErrors] = useState<{ value?: string; rollout?: string }>({});
  const { busy, error, save } = useDialogSave(onClose);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const percentage = Number(rollout);
    const found = {
      value: type !== 'conditions' && !value.trim() ? `Enter a value, for example ${RULE_TYPES[type].example}` : undefined,
      rollout: rollout.trim() === '' || !Number.isInteger(percentage) || percentage < 0 || percentage > 100 ? 'A whole number from 0 to 100' : undefined,
    };
    setErrors(found);
    if (found.value || found.rollout) return;
    const target = type === 'conditions' ? { rule_value: null, conditions: conditions.map(toBody) } : { rule_value: value.trim(), conditions: null };
    // Only a flag with variants (or a rule that names one) sends the field at all.
    const pinned = variantChoices.length > 0 ? { variant: serve && variant ? variant : null } : {};
    await save(() => onSave({ rule_type: type, ...target, enabled, rollout_percentage: percentage, serve, ...pinned }));
  };
  return (
    <Modal open onOpenChange={(open) => !open && onClose()} title={rule ? 'Edit rule' : 'Add rule'} description="What a matching user gets while the flag is on.">
      <form onSubmit={submit} noValidate>
        <fieldset className="radio-list">
          <legend>Match by</legend>
          {(Object.keys(RULE_TYPES) as RuleType[]).map((key) => (
            <label key={key} className="checkbox">
              <input type="radio" name="rule-type" value={key} checked={type === key} onChange={() => setType(key)} /> {RULE_TYPES[key].label}
              <span className="muted small"> (e.g. {RULE_TYPES[key].example})</span>
            </label>
          ))}
        </fieldset>
        {type === 'conditions' ? (
          <ConditionsEditor conditions={conditions} onChange={setConditions} segmentKeys={segmentKeys} seenAttributes={seenAttributes} />
        ) : (
          <Field label="Value" value={value} onChange={setValue} error={errors.value} hint={`${RULE_TYPES[type].help} Example: ${RULE_TYPES[type].example}`} placeholder={RULE_TYPES[type].example} maxLength={400} autoFocus />
        )}
        <fieldset className="radio-list inline">
          <legend>Matching users get</legend>
          <label className="checkbox">
            <input type="radio" name="rule-serve" checked={serve} onChange={() => setServe(true)} /> the flag on
          </label>
          <label className="checkbox">
            <input type="radio" name="rule-serve" checked={!serve} onChange={() => setServe(false)} /> the flag off
          </label>
        </fieldset>
        {variantChoices.length > 0 && serve && (
          <div className="field narrow">
            <label htmlFor="rule-variant">Serve variant</label>
            <select id="rule-variant" value={variant} onChange={(event) => setVariant(event.target.value)} aria-describedby="rule-variant-hint">
              <option value="">(by weight)</option>
              {variantChoices.map((key) => (
                <option key={key} value={key}>
                  {key}
                </option>
              ))}
            </select>
            <p className="hint" id="rule-variant-hint">
              The variant the users this rule serves get; by weight, they are spread as the flag’s weights say.
            </p>
          </div>
        )}
        <Field
          label="Rule rollout (%)"
          className="number"
          type="number"
          min={0}
          max={100}
          value={rollout}
          onChange={setRollout}
          error={errors.rollout}
          hint="Of the users this rule matches, this share gets what it serves (by a stable hash of their user_id); the others go on to the next rule."
        />
        <label className="checkbox">
          <input type="checkbox" checked={enabled} onChange={(event) => setEnabled(event.target.checked)} /> Rule enabled
        </label>
        <DialogActions error={error} busy={busy} submitLabel={rule ? 'Save rule' : 'Add rule'} onCancel={onClose} />
      </form>
    </Modal>
  );
}

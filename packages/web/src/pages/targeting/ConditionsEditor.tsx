import { useId } from 'react';
import { useFocusAfterRemoval } from '../../components/useFocusAfterRemoval';
import type { Condition } from '../../api/client';
import { BUILT_IN_ATTRIBUTES, OPERATORS, blankCondition, type Operator } from './conditions';
import { ValueChips } from './ValueChips';

interface ConditionsEditorProps {
  conditions: Condition[];
  onChange: (conditions: Condition[]) => void;
  /** The project's segment keys offered for "is in segment"; absent in a segment, which cannot name one. */
  segmentKeys?: readonly string[];
  /** Custom attribute names the environment's requests carried: offered before the built-in ones. */
  seenAttributes?: readonly string[];
  /** Where they were seen, as the suggestions say it. */
  seenWhere?: string;
}

/** A rule's or a segment's conditions: all must hold; any value of one may match. */
export function ConditionsEditor({ conditions, onChange, segmentKeys, seenAttributes = [], seenWhere = 'in this environment' }: ConditionsEditorProps) {
  const id = useId();
  const operators = (Object.keys(OPERATORS) as Operator[]).filter((operator) => operator !== 'IN_SEGMENT' || segmentKeys);
  const set = (index: number, changes: Partial<Condition>) => onChange(conditions.map((condition, i) => (i === index ? { ...condition, ...changes } : condition)));
  // After Remove: the first field of the condition that took its place, else "Add condition".
  const { container, removedAt } = useFocusAfterRemoval<HTMLDivElement>({ row: 'fieldset.condition', field: 'input, select', fallback: '.add-condition' });
  return (
    <div className="conditions" ref={container}>
      <p className="hint">Every condition must hold; a condition holds when any of its values matches.</p>
      <datalist id={`${id}-attributes`}>
        {seenAttributes.map((name) => (
          <option key={`seen-${name}`} value={name} label={`seen ${seenWhere}`} />
        ))}
        {BUILT_IN_ATTRIBUTES.map((name) => (
          <option key={name} value={name} label="built in" />
        ))}
      </datalist>
      {segmentKeys && (
        <datalist id={`${id}-segments`}>
          {segmentKeys.map((key) => (
            <option key={key} value={key} />
          ))}
        </datalist>
      )}
      {conditions.map((condition, index) => {
        const name = `condition ${index + 1}`;
        const operator = OPERATORS[condition.operator as Operator] ?? OPERATORS.IN;
        const inSegment = condition.operator === 'IN_SEGMENT';
        const field = `${id}-${index}`;
        return (
          <fieldset key={index} className="condition">
            <legend>Condition {index + 1}</legend>
            <div className="condition-grid">
              {!inSegment && (
                <div className="field">
                  <label htmlFor={`${field}-attribute`}>Attribute</label>
                  <input id={`${field}-attribute`} value={condition.attribute ?? ''} list={`${id}-attributes`} maxLength={64} autoComplete="off" placeholder="plan" onChange={(event) => set(index, { attribute: event.target.value })} />
                </div>
              )}
              <div className="field">
                <label htmlFor={`${field}-operator`}>Operator</label>
                <select id={`${field}-operator`} value={condition.operator} onChange={(event) => set(index, { operator: event.target.value as Operator })}>
                  {operators.map((key) => (
                    <option key={key} value={key}>
                      {OPERATORS[key].words}
                    </option>
                  ))}
                </select>
              </div>
              {operator.values !== 'none' && (
                <div className="field values">
                  <label htmlFor={`${field}-values`}>{inSegment ? 'Segments' : operator.values === 'one' ? 'Value' : 'Values'}</label>
                  <ValueChips
                    id={`${field}-values`}
                    values={condition.values ?? []}
                    onChange={(values) => set(index, { values })}
                    of={name}
                    single={operator.values === 'one'}
                    placeholder={operator.example}
                    listId={inSegment ? `${id}-segments` : undefined}
                    describedBy={`${field}-values-hint`}
                  />
                  <p className="hint" id={`${field}-values-hint`}>
                    {inSegment && segmentKeys?.length === 0 ? 'This project has no segments yet: create one under Segments.' : operator.values === 'one' ? 'Type it and press Enter.' : 'Type a value and press Enter, or paste a list (one a line, or comma-separated).'}
                  </p>
                </div>
              )}
            </div>
            <div className="row-actions">
              <label className="checkbox small">
                <input type="checkbox" checked={condition.negate ?? false} onChange={(event) => set(index, { negate: event.target.checked })} /> not
              </label>
              {operator.anyCase && (
                <label className="checkbox small">
                  <input type="checkbox" checked={condition.case_insensitive ?? false} onChange={(event) => set(index, { case_insensitive: event.target.checked })} /> ignore case
                </label>
              )}
              <button type="button" className="secondary small" disabled={conditions.length === 1} onClick={() => {
                  onChange(conditions.filter((_, i) => i !== index));
                  removedAt(index);
                }} aria-label={`Remove ${name}`}>
                Remove
              </button>
            </div>
          </fieldset>
        );
      })}
      <button type="button" className="secondary add-condition" disabled={conditions.length >= 30} onClick={() => onChange([...conditions, blankCondition()])}>
        Add condition
      </button>
    </div>
  );
}

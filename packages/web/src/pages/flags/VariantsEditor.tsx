import { useEffect, useId, useRef, useState, type FormEvent, type ReactNode } from 'react';
import type { Flag, Variant } from '../../api/client';
import { useSaveVariants } from '../../api/flags';
import { isDrafted } from '../../api/drafts';
import { FormError } from '../../components/FormError';
import { evenWeights, MAX_VARIANTS, parseValue, percent, rowProblems, TOTAL, totalWeight, typeOf, VALUE_TYPES, valueText, weightOf, type RowProblems, type ValueType, type VariantRow } from './variants';

interface Draft {
  type: ValueType;
  rows: VariantRow[];
  /** The off variant by row id, so that renaming its key keeps the choice. */
  offId: number | null;
}

function draftOf(flag: Flag, nextId: () => number): Draft {
  const variants = flag.variants;
  const rows = variants.map((variant) => ({ id: nextId(), key: variant.key, value: valueText(variant.value), weight: percent(variant.weight), description: variant.description ?? '' }));
  const off = variants.findIndex((variant) => variant.key === flag.off_variant);
  return { type: typeOf(variants), rows, offId: rows[off]?.id ?? null };
}

/**
 * A flag's variants (docs/variants.md): the value type, the variants in order (the order decides who
 * gets which by weight), their weights as percentages that must total 100 %, and the variant
 * served to users who get the flag off. Saved as a whole with one PUT.
 */
export function VariantsEditor({ flag, projectId, envId, readOnly, saveLabel }: { flag: Flag; projectId: string; envId: string; readOnly: boolean; saveLabel?: string | undefined }) {
  const save = useSaveVariants(projectId, envId, flag.id);
  const counter = useRef(0);
  const nextId = () => ++counter.current;
  const [draft, setDraft] = useState<Draft>(() => draftOf(flag, nextId));
  // Key and weight problems show after a first try to save; a value's show as it is typed.
  const [tried, setTried] = useState(false);
  const [formError, setFormError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const { type, rows, offId } = draft;
  const problems = rowProblems(type, rows);
  const total = totalWeight(rows);
  const offSelectId = useId();

  // Moving or removing a variant re-renders the list: the focus goes back to the button pressed
  // (or its neighbour when that one is now disabled), or to "Add variant" after a removal.
  const list = useRef<HTMLOListElement>(null);
  const addButton = useRef<HTMLButtonElement>(null);
  const refocus = useRef<{ row: number; action: 'up' | 'down' } | 'add' | null>(null);
  useEffect(() => {
    const target = refocus.current;
    refocus.current = null;
    if (target === 'add') addButton.current?.focus();
    else if (target) {
      const button = (action: string) => list.current?.querySelector<HTMLButtonElement>(`[data-row="${target.row}"][data-action="${action}"]`);
      const pressed = button(target.action);
      (pressed && !pressed.disabled ? pressed : button(target.action === 'up' ? 'down' : 'up'))?.focus();
    }
  });

  const change = (next: Partial<Draft>) => {
    setSaved(false);
    setDraft((current) => ({ ...current, ...next }));
  };
  const setRow = (id: number, fields: Partial<VariantRow>) => change({ rows: rows.map((row) => (row.id === id ? { ...row, ...fields } : row)) });
  const move = (index: number, delta: number) => {
    const next = [...rows];
    const [row] = next.splice(index, 1);
    if (!row) return;
    next.splice(index + delta, 0, row);
    refocus.current = { row: row.id, action: delta < 0 ? 'up' : 'down' };
    change({ rows: next });
  };
  const add = () => change({ rows: [...rows, { id: nextId(), key: '', value: type === 'boolean' ? 'true' : '', weight: rows.length === 0 ? '100' : '0', description: '' }] });
  const remove = (id: number) => {
    refocus.current = 'add';
    change({ rows: rows.filter((row) => row.id !== id), offId: offId === id ? null : offId });
  };
  const splitEvenly = () => {
    const weights = evenWeights(rows.length);
    change({ rows: rows.map((row, i) => ({ ...row, weight: percent(weights[i] ?? 0) })) });
  };
  const chooseType = (next: ValueType) => change({ type: next, rows: next === 'boolean' ? rows.map((row) => ({ ...row, value: row.value === 'false' ? 'false' : 'true' })) : rows });
  const discard = () => {
    setDraft(draftOf(flag, nextId));
    setTried(false);
    setFormError(null);
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setTried(true);
    setSaved(false);
    if (problems.size > 0) return setFormError('Not saved: correct the variants marked below.');
    if (rows.length > 0 && total !== TOTAL) return setFormError(`Not saved: the weights total ${percent(total)} %; they must total exactly 100 %.`);
    const off = rows.find((row) => row.id === offId);
    if (rows.length > 0 && !off) return setFormError('Not saved: choose the off variant, served to users who get the flag off.');
    const variants: Variant[] = rows.map((row) => {
      const parsed = parseValue(type, row.value);
      return { key: row.key.trim(), value: 'value' in parsed ? parsed.value : null, weight: weightOf(row.weight) ?? 0, ...(row.description.trim() && { description: row.description.trim() }) };
    });
    setFormError(null);
    try {
      const body = { variants, off_variant: off ? off.key.trim() : null };
      const updated = await save.mutateAsync(body);
      // Drafted (an environment that needs approval): shown as the draft makes the flag.
      setDraft(draftOf(isDrafted(updated) ? { ...flag, ...body } : updated, nextId));
      setTried(false);
      setSaved(true);
    } catch (error) {
      setFormError(`Not saved: ${(error as Error).message}`);
    }
  };

  let fresh = 0;
  const dirty = JSON.stringify(strip(draft)) !== JSON.stringify(strip(draftOf(flag, () => ++fresh)));
  return (
    <section className="panel" aria-labelledby="variants-heading">
      <h3 id="variants-heading">Variants</h3>
      <p className="muted small">
        {rows.length === 0
          ? 'No variants: this flag serves on or off. Add variants to serve a string, number, boolean or JSON value: users who get it on get a variant by weight (or the one their rule names), users who get it off get the off variant.'
          : 'Users who get the flag on get a variant by weight, unless their rule names one; the same user keeps the same variant (a stable hash of the flag key and their user_id). Users who get it off get the off variant. The order counts: moving a variant moves users between variants.'}
      </p>
      <form onSubmit={submit} noValidate>
        <fieldset className="plain" disabled={readOnly}>
          {(rows.length > 0 || !readOnly) && (
            <div className="everyone-else variant-type">
              <span className="everyone-label" aria-hidden="true">
                Value type
              </span>
              <fieldset className="segmented">
                <legend>Value type</legend>
                {(Object.keys(VALUE_TYPES) as ValueType[]).map((key) => (
                  <label key={key} className={type === key ? 'selected' : ''}>
                    <input type="radio" name="variant-type" value={key} checked={type === key} onChange={() => chooseType(key)} />
                    {VALUE_TYPES[key]}
                  </label>
                ))}
              </fieldset>
            </div>
          )}
          {rows.length > 0 && (
            <ol className="variants" ref={list}>
              {rows.map((row, i) => (
                <VariantItem
                  key={row.id}
                  row={row}
                  type={type}
                  position={i + 1}
                  count={rows.length}
                  problems={problems.get(row.id)}
                  showAll={tried}
                  readOnly={readOnly}
                  onChange={(fields) => setRow(row.id, fields)}
                  onMove={(delta) => move(i, delta)}
                  onRemove={() => remove(row.id)}
                />
              ))}
            </ol>
          )}
          {rows.length > 0 && (
            <p className={`variants-total${total === TOTAL ? '' : ' off-total'}`} role="status" id="variants-total">
              Total: {percent(total)} %{total === TOTAL ? '' : total < TOTAL ? ` (${percent(TOTAL - total)} % to go: weights must total 100 %)` : ` (${percent(total - TOTAL)} % too many: weights must total 100 %)`}
            </p>
          )}
          {!readOnly && (
            <div className="actions start">
              <button type="button" className="secondary" onClick={add} disabled={rows.length >= MAX_VARIANTS} ref={addButton}>
                Add variant
              </button>
              {rows.length > 1 && (
                <button type="button" className="secondary" onClick={splitEvenly}>
                  Split evenly
                </button>
              )}
            </div>
          )}
          {rows.length > 0 && (
            <div className="field narrow">
              <label htmlFor={offSelectId}>Off variant</label>
              <select id={offSelectId} value={offId ?? ''} onChange={(event) => change({ offId: event.target.value ? Number(event.target.value) : null })} aria-describedby={`${offSelectId}-hint`}>
                <option value="">Choose…</option>
                {rows.map((row, i) => (
                  <option key={row.id} value={row.id}>
                    {row.key.trim() || `Variant ${i + 1} (no key yet)`}
                  </option>
                ))}
              </select>
              <p className="hint" id={`${offSelectId}-hint`}>
                Served to users who get the flag off: it is switched off, a rule serves off, or they are outside the rollout.
              </p>
            </div>
          )}
          <FormError message={formError} />
          {!readOnly && (
            <div className="actions start">
              <button type="submit" disabled={save.isPending}>
                {saveLabel ?? 'Save variants'}
              </button>
              {dirty && (
                <button type="button" className="secondary" onClick={discard}>
                  Discard changes
                </button>
              )}
              <span role="status" className="muted">
                {saved ? (saveLabel ? 'Variants added to the draft' : 'Variants saved') : ''}
              </span>
            </div>
          )}
        </fieldset>
      </form>
    </section>
  );
}

/** A draft without its row ids, to compare with what the server holds. */
const strip = ({ type, rows, offId }: Draft) => ({ type: rows.length ? type : null, rows: rows.map(({ id: _id, ...row }) => row), off: rows.findIndex((row) => row.id === offId) });

function VariantItem({ row, type, position, count, problems, showAll, readOnly, onChange, onMove, onRemove }: { row: VariantRow; type: ValueType; position: number; count: number; problems: RowProblems | undefined; showAll: boolean; readOnly: boolean; onChange: (fields: Partial<VariantRow>) => void; onMove: (delta: number) => void; onRemove: () => void }) {
  const id = useId();
  const name = row.key.trim() || `variant ${position}`;
  // A value's problem shows as it is typed, once there is something typed (or after a try to save).
  const valueProblem = problems?.value && (showAll || row.value.trim() !== '') ? problems.value : undefined;
  const description = (
    <Cell id={`${id}-description`} label="Description" rest={type === 'json'}>
      <input id={`${id}-description`} value={row.description} onChange={(event) => onChange({ description: event.target.value })} placeholder="optional" maxLength={2000} />
    </Cell>
  );
  return (
    <li>
      <fieldset className="variant">
        <legend>Variant {position}</legend>
        <div className="variant-fields">
          <Cell id={`${id}-key`} label="Key" error={showAll ? problems?.key : undefined}>
            <input id={`${id}-key`} value={row.key} onChange={(event) => onChange({ key: event.target.value })} maxLength={100} placeholder="blue" autoComplete="off" spellCheck={false} aria-invalid={showAll && problems?.key ? true : undefined} aria-describedby={showAll && problems?.key ? `${id}-key-error` : undefined} />
          </Cell>
          <Cell id={`${id}-weight`} label="Weight (%)" error={showAll ? problems?.weight : undefined}>
            <input id={`${id}-weight`} className="number" inputMode="decimal" value={row.weight} onChange={(event) => onChange({ weight: event.target.value })} aria-invalid={showAll && problems?.weight ? true : undefined} aria-describedby={[showAll && problems?.weight ? `${id}-weight-error` : '', 'variants-total'].filter(Boolean).join(' ')} />
          </Cell>
          {type === 'json' && description}
          <Cell id={`${id}-value`} label="Value" wide={type === 'json'} error={type === 'json' ? undefined : valueProblem}>
            {type === 'boolean' ? (
              <select id={`${id}-value`} value={row.value} onChange={(event) => onChange({ value: event.target.value })}>
                <option value="true">true</option>
                <option value="false">false</option>
              </select>
            ) : type === 'json' ? (
              <>
                <textarea id={`${id}-value`} className="code" rows={Math.min(12, Math.max(3, row.value.split('\n').length))} value={row.value} onChange={(event) => onChange({ value: event.target.value })} spellCheck={false} aria-invalid={valueProblem ? true : undefined} aria-describedby={`${id}-value-check`} placeholder='{"color": "blue"}' />
                {/* Checked as one types: polite, so a half-typed object is not shouted at every key. */}
                <p id={`${id}-value-check`} className={valueProblem ? 'json-check error' : 'json-check ok'} aria-live="polite">
                  {valueProblem ?? (row.value.trim() ? 'Valid JSON' : '')}
                </p>
              </>
            ) : (
              <input id={`${id}-value`} value={row.value} onChange={(event) => onChange({ value: event.target.value })} inputMode={type === 'number' ? 'decimal' : undefined} autoComplete="off" aria-invalid={valueProblem ? true : undefined} aria-describedby={valueProblem ? `${id}-value-error` : undefined} />
            )}
          </Cell>
          {type !== 'json' && description}
        </div>
        {!readOnly && (
          <div className="row-actions">
            <button type="button" className="secondary small" disabled={position === 1} onClick={() => onMove(-1)} aria-label={`Move ${name} up`} data-row={row.id} data-action="up">
              ↑
            </button>
            <button type="button" className="secondary small" disabled={position === count} onClick={() => onMove(1)} aria-label={`Move ${name} down`} data-row={row.id} data-action="down">
              ↓
            </button>
            <button type="button" className="danger small" onClick={onRemove} aria-label={`Remove ${name}`}>
              Remove
            </button>
          </div>
        )}
      </fieldset>
    </li>
  );
}

/** A labelled field of a variant; `wide` takes a row of its own, `rest` what is left of the row. */
function Cell({ id, label, error, wide, rest, children }: { id: string; label: string; error?: string | undefined; wide?: boolean; rest?: boolean; children: ReactNode }) {
  return (
    <div className={`field${wide ? ' wide' : ''}${rest ? ' rest' : ''}`}>
      <label htmlFor={id}>{label}</label>
      {children}
      <FormError message={error} id={`${id}-error`} />
    </div>
  );
}

import { useState, type FormEvent } from 'react';
import * as Switch from '@radix-ui/react-switch';
import { useParams } from 'react-router';
import type { Webhook } from '../../api/client';
import { useWebhooks } from '../../api/queries';
import { useCreateWebhook, useDeleteWebhook, useDeliveries, useResendDelivery, useTestWebhook, useUpdateWebhook } from '../../api/webhooks';
import { useRole } from '../../api/roles';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { Field } from '../../components/Field';
import { fields } from '../../api/fields';
import { Modal } from '../../components/Modal';
import { RoleNote } from '../../components/RoleNote';
import { SecretOnce } from '../../components/SecretOnce';
import { Empty, QueryState } from '../../components/States';
import { ago, dateTime } from '../../components/time';
import { FormError, Outcome } from '../../components/FormError';

type ResourceType = (typeof fields.resourceTypes)[number];
type AuditAction = (typeof fields.auditActions)[number];

/** The dashboard's name for each resource type's group, in the order shown (a new type must get one). */
const GROUP_LABELS: Record<ResourceType, string> = {
  flag: 'Flags',
  rule: 'Targeting rules',
  segment: 'Segments',
  environment: 'Environments',
  project: 'Project',
  member: 'Members',
  webhook: 'Webhooks',
  schedule: 'Scheduled changes',
  change_request: 'Change requests',
  metric: 'Metrics',
  experiment: 'Experiments',
  release: 'Guarded releases',
};
/** Actions no webhook hears: the project exists before any webhook, and a test send goes to one webhook whatever it listens to. */
const UNHEARD: readonly AuditAction[] = ['project.created', 'webhook.test'];

/** The audit actions a webhook can subscribe to (docs/api.md, "Audit log": the API's own list), grouped by resource. */
export const EVENT_GROUPS: { label: string; actions: AuditAction[] }[] = (Object.entries(GROUP_LABELS) as [ResourceType, string][]).map(([type, label]) => ({
  label,
  actions: fields.auditActions.filter((action) => action.startsWith(`${type}.`) && !UNHEARD.includes(action)),
}));

export function WebhooksPage() {
  const { projectId = '' } = useParams();
  const { can } = useRole(projectId);
  const isOwner = can('owner');
  const webhooks = useWebhooks(projectId, isOwner);
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);

  if (!isOwner) {
    return (
      <section className="panel">
        <h2>Webhooks</h2>
        <RoleNote need="owner" what="see and manage webhooks, since they hold signing secrets" />
      </section>
    );
  }
  return (
    <div className="stack">
      <div className="page-head">
        <h2>Webhooks</h2>
        <button type="button" onClick={() => setCreating(true)}>
          New webhook
        </button>
      </div>
      <p className="muted">
        Guidon POSTs each matching change as JSON to your URL, signed in <code>X-Guidon-Signature</code> (HMAC-SHA256 of <code>timestamp.body</code> with the secret), and retries for about an hour when the answer is not 2xx.
      </p>
      {secret && (
        <SecretOnce
          id="webhook-secret-title"
          headingLevel={3}
          title={`Signing secret for ${secret.url}`}
          note="Copy it now: it is shown only this once. Your receiver checks each signature with it."
          secret={secret.secret}
          secretLabel="The webhook's signing secret"
          copyLabel="Copy the signing secret"
          onDone={() => setSecret(null)}
        />
      )}
      <QueryState query={webhooks} what="webhooks">
        {(list) =>
          list.length === 0 ? (
            <Empty title="No webhooks yet">
              <p>Tell chat, CI or your own service when a flag changes: add a webhook with the URL that should receive the events.</p>
            </Empty>
          ) : (
            <ul className="stack plain" aria-label="Webhooks">
              {list.map((hook) => (
                <WebhookItem key={hook.id} projectId={projectId} hook={hook} />
              ))}
            </ul>
          )
        }
      </QueryState>
      {creating && (
        <WebhookDialog
          projectId={projectId}
          onClose={() => setCreating(false)}
          onCreated={(created) => setSecret({ url: created.url, secret: created.secret })}
        />
      )}
    </div>
  );
}

function WebhookItem({ projectId, hook }: { projectId: string; hook: Webhook }) {
  const update = useUpdateWebhook(projectId, hook.id);
  const sendTest = useTestWebhook(projectId, hook.id);
  const remove = useDeleteWebhook(projectId, hook.id);
  const [showDeliveries, setShowDeliveries] = useState(false);
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);

  const setEnabled = async (enabled: boolean) => {
    setMessage(null);
    try {
      await update.mutateAsync({ enabled });
    } catch (caught) {
      setMessage({ ok: false, text: (caught as Error).message });
    }
  };
  const test = async () => {
    setMessage(null);
    try {
      await sendTest.mutateAsync();
      setMessage({ ok: true, text: 'Test event queued: it appears under Deliveries within a few seconds.' });
      setShowDeliveries(true);
    } catch (caught) {
      setMessage({ ok: false, text: (caught as Error).message });
    }
  };

  return (
    <li className="panel webhook">
      <div className="page-head">
        <div>
          <code className="webhook-url">{hook.url}</code>
          {hook.description && <p className="muted small">{hook.description}</p>}
          <p className="muted small">Events: {hook.events.includes('*') ? 'every event' : hook.events.join(', ')}</p>
        </div>
        <div className="switch-row">
          <Switch.Root className="switch" checked={hook.enabled} onCheckedChange={(on) => void setEnabled(on)} aria-label={`Webhook ${hook.url} enabled`}>
            <Switch.Thumb className="switch-thumb" />
          </Switch.Root>
          <span aria-hidden="true" className="switch-label">
            {hook.enabled ? 'On' : 'Off'}
          </span>
        </div>
      </div>
      <div className="row-actions">
        <button type="button" className="secondary small" onClick={() => void test()} disabled={!hook.enabled} title={hook.enabled ? undefined : 'Switch the webhook on to send a test'} aria-label={`Send test event to ${hook.url}`}>
          Send test
        </button>
        <button type="button" className="secondary small" onClick={() => setShowDeliveries(!showDeliveries)} aria-expanded={showDeliveries} aria-label={`Deliveries of ${hook.url}`}>
          Deliveries
        </button>
        <button type="button" className="secondary small" onClick={() => setEditing(true)} aria-label={`Edit ${hook.url}`}>
          Edit
        </button>
        <button type="button" className="danger small" onClick={() => setDeleting(true)} aria-label={`Delete ${hook.url}`}>
          Delete
        </button>
      </div>
      <Outcome message={message} />
      {showDeliveries && <Deliveries projectId={projectId} hook={hook} />}
      {editing && <WebhookDialog projectId={projectId} hook={hook} onClose={() => setEditing(false)} />}
      <ConfirmDialog
        open={deleting}
        onOpenChange={setDeleting}
        title={`Delete the webhook to ${hook.url}?`}
        description="It receives nothing more; deliveries not yet sent are dropped with it."
        confirmLabel="Delete webhook"
        onConfirm={async () => {
          await remove.mutateAsync();
        }}
      />
    </li>
  );
}

function Deliveries({ projectId, hook }: { projectId: string; hook: Webhook }) {
  const deliveries = useDeliveries(projectId, hook.id);
  const resendDelivery = useResendDelivery(projectId, hook.id);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const resend = async (deliveryId: string) => {
    setMessage(null);
    try {
      await resendDelivery.mutateAsync(deliveryId);
      setMessage({ ok: true, text: 'Sent again as a new delivery.' });
    } catch (caught) {
      setMessage({ ok: false, text: (caught as Error).message });
    }
  };
  return (
    <div className="deliveries">
      <h3>Deliveries</h3>
      <Outcome message={message} />
      <QueryState query={deliveries} what="deliveries">
        {(page) =>
          page.items.length === 0 ? (
            <p className="state">No deliveries yet. Send a test, or change a flag.</p>
          ) : (
            <div className="table-wrap">
              <table className="list">
                <caption className="visually-hidden">Deliveries to {hook.url}, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Event</th>
                    <th scope="col">Result</th>
                    <th scope="col">Attempt</th>
                    <th scope="col">When</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((delivery) => {
                    const ok = delivery.status_code !== null && delivery.status_code >= 200 && delivery.status_code < 300;
                    return (
                      <tr key={delivery.id}>
                        <th scope="row">
                          <code>{delivery.action}</code>
                        </th>
                        <td data-label="Result">
                          <span className={`badge ${ok ? 'ok' : 'failed'}`}>{ok ? `Delivered ${delivery.status_code}` : delivery.status_code !== null ? `Failed ${delivery.status_code}` : 'Failed'}</span>
                          {delivery.error && <span className="muted small"> {delivery.error}</span>}
                          <span className="muted small"> · {delivery.duration_ms} ms</span>
                        </td>
                        <td data-label="Attempt">{delivery.attempt}</td>
                        <td data-label="When">
                          <time dateTime={delivery.created_at} title={dateTime(delivery.created_at)}>
                            {ago(delivery.created_at)}
                          </time>
                        </td>
                        <td>
                          <button type="button" className="secondary small" onClick={() => void resend(delivery.id)} disabled={!hook.enabled} title={hook.enabled ? undefined : 'Switch the webhook on to resend'} aria-label={`Resend ${delivery.action} of ${dateTime(delivery.created_at)}`}>
                            Resend
                          </button>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )
        }
      </QueryState>
    </div>
  );
}

/** Edits `hook`, or creates a webhook and hands its secret to `onCreated`. */
function WebhookDialog({ projectId, hook, onClose, onCreated }: { projectId: string; hook?: Webhook; onClose: () => void; onCreated?: (created: Webhook & { secret: string }) => void }) {
  const create = useCreateWebhook(projectId);
  const update = useUpdateWebhook(projectId, hook?.id ?? '');
  const [url, setUrl] = useState(hook?.url ?? '');
  const [description, setDescription] = useState(hook?.description ?? '');
  const [all, setAll] = useState(hook ? hook.events.includes('*') : true);
  const [events, setEvents] = useState<AuditAction[]>(hook && !hook.events.includes('*') ? (hook.events as AuditAction[]) : ['flag.toggled']);
  const [errors, setErrors] = useState<{ url?: string; events?: string; form?: string }>({});
  const [busy, setBusy] = useState(false);
  const toggle = (action: AuditAction, on: boolean) => setEvents(on ? [...events, action] : events.filter((item) => item !== action));

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const found = {
      url: /^https?:\/\/\S+$/.test(url.trim()) ? undefined : 'Enter an http or https URL, e.g. https://ci.example.com/guidon',
      events: all || events.length > 0 ? undefined : 'Pick at least one event, or every event',
    };
    setErrors(found);
    if (found.url || found.events) return;
    setBusy(true);
    const body = { url: url.trim(), description: description.trim() || null, events: all ? ['*' as const] : events };
    try {
      if (hook) await update.mutateAsync(body);
      else onCreated?.(await create.mutateAsync(body));
      onClose();
    } catch (caught) {
      const message = (caught as Error).message;
      setErrors(/url|address|host/i.test(message) ? { url: message } : { form: message });
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal open onOpenChange={(open) => !open && onClose()} title={hook ? 'Edit webhook' : 'New webhook'} description={hook ? 'The signing secret stays the same.' : 'Its signing secret is shown once, after you create it.'}>
      <form onSubmit={submit} noValidate>
        <Field label="Payload URL" type="url" value={url} onChange={setUrl} error={errors.url} placeholder="https://ci.example.com/guidon" autoFocus hint="Private and loopback addresses are refused unless the server allows them." />
        <Field label="Description (optional)" value={description} onChange={setDescription} maxLength={2000} />
        <fieldset className="events-picker" aria-describedby={errors.events ? 'events-error' : undefined}>
          <legend>Events</legend>
          <label className="checkbox">
            <input type="checkbox" checked={all} onChange={(event) => setAll(event.target.checked)} /> Every event, including ones added later
          </label>
          {!all && (
            <div className="event-groups">
              {EVENT_GROUPS.map((group) => (
                <fieldset key={group.label}>
                  <legend>{group.label}</legend>
                  {group.actions.map((action) => (
                    <label key={action} className="checkbox small">
                      <input type="checkbox" checked={events.includes(action)} onChange={(event) => toggle(action, event.target.checked)} /> <code>{action}</code>
                    </label>
                  ))}
                </fieldset>
              ))}
            </div>
          )}
          <FormError message={errors.events} id="events-error" />
        </fieldset>
        <FormError message={errors.form} />
        <div className="actions">
          <button type="button" className="secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" disabled={busy}>
            {hook ? 'Save webhook' : 'Create webhook'}
          </button>
        </div>
      </form>
    </Modal>
  );
}

import { Type } from 'typebox';
import type { AuditAction } from '../changes/changes.schemas.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import type { Config } from '../../config.js';
import type { WebhookSender } from './webhooks.sender.js';
import { onlyProvided } from '../../db/values.js';
import { Conflict, Invalid, NotFound, RateLimited } from '../../errors.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import { urlOrigin } from '../audit/audit.repository.js';
import { classifyHost } from './addresses.js';
import { countWebhooks, createWebhook, deleteWebhook, enqueueTest, listAttempts, listWebhooks, requireWebhook, resendAttempt, TEST_SENDS_PER_MINUTE, updateWebhook, WEBHOOKS_PER_PROJECT } from './webhooks.repository.js';
import { CreatedWebhook, CreateWebhookBody, DeliveryPage, DeliveryParams, DeliveryQuery, UpdateWebhookBody, WebhookParams } from './webhooks.schemas.js';

type Webhook = Awaited<ReturnType<typeof requireWebhook>>;
const tooManyByHand = (retryAfter: number) => new RateLimited(retryAfter, `At most ${TEST_SENDS_PER_MINUTE} test sends and resends a webhook a minute; try again in ${retryAfter} s`);
/** The audit event keeps the URL's origin only, in resource_key and (by redacted()) in before / after: a webhook URL often carries a secret. */
const change = (action: AuditAction, before: Webhook | null, after: Webhook | null) => ({
  action,
  resource_type: 'webhook' as const,
  resource_id: (after ?? before)!.id,
  resource_key: urlOrigin((after ?? before)!.url),
  before,
  after,
});

/** /api/projects/{project_id}/webhooks (docs/api.md, Webhooks); the sending is webhooks.sender.ts. */
export const webhookRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites; config: Readonly<Config>; webhooks: WebhookSender }> = async (app, { db, writes, config, webhooks }) => {
  const tags = ['webhooks'];
  const WebhookRef = Type.Ref('Webhook');
  const base = '/projects/:project_id/webhooks';

  /** http(s) only; a host that is or resolves to a blocked address (addresses.ts) is refused unless WEBHOOK_ALLOW_PRIVATE=true. */
  async function checkedUrl(raw: string): Promise<string> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new Invalid('url must be an absolute http or https URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Invalid('url must be an absolute http or https URL');
    if (url.username || url.password) throw new Invalid('url must not carry credentials');
    if (!config.webhookAllowPrivate && (await classifyHost(url)) === 'private') {
      throw new Invalid('url must not point at a private, loopback, link-local or reserved address (WEBHOOK_ALLOW_PRIVATE=true allows it)');
    }
    return url.toString();
  }

  app.post(base, {
    config: { role: 'owner' },
    schema: { tags, params: ProjectParams, body: CreateWebhookBody, response: { 201: CreatedWebhook, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request, reply) => {
    const { events = ['*'], description = null, enabled = true } = request.body;
    const url = await checkedUrl(request.body.url);
    const created = await writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      // Counted under the project's lock that apply takes first: two creates cannot both see 19.
      if ((await countWebhooks(trx, request.params.project_id)) >= WEBHOOKS_PER_PROJECT) {
        throw new Conflict(`A project has at most ${WEBHOOKS_PER_PROJECT} webhooks; delete one first`);
      }
      const result = await createWebhook(trx, request.params.project_id, { url, events: [...new Set(events)], description, enabled });
      record(change('webhook.created', null, result.webhook));
      return result;
    });
    return reply.code(201).send({ ...created.webhook, secret: created.secret });
  });

  app.get(base, {
    config: { role: 'owner' },
    schema: { tags, params: ProjectParams, response: { 200: Type.Array(WebhookRef), ...errorResponses(401, 403, 404) } },
  }, async (request) => listWebhooks(db, request.params.project_id));

  app.get(`${base}/:webhook_id`, {
    config: { role: 'owner' },
    schema: { tags, params: WebhookParams, response: { 200: WebhookRef, ...errorResponses(401, 403, 404) } },
  }, async (request) => requireWebhook(db, request.params.project_id, request.params.webhook_id));

  app.put(`${base}/:webhook_id`, {
    config: { role: 'owner' },
    schema: { tags, params: WebhookParams, body: UpdateWebhookBody, response: { 200: WebhookRef, ...errorResponses(400, 401, 403, 404) } },
  }, async (request) => {
    const { events, description, enabled } = request.body;
    const url = request.body.url === undefined ? undefined : await checkedUrl(request.body.url);
    return writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const before = await requireWebhook(trx, request.params.project_id, request.params.webhook_id);
      const after = await updateWebhook(trx, before.id, onlyProvided({ url, events: events && [...new Set(events)], description, enabled }));
      record(change('webhook.updated', before, after));
      return after;
    });
  });

  app.delete(`${base}/:webhook_id`, {
    config: { role: 'owner' },
    schema: { tags, params: WebhookParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404) } },
  }, async (request, reply) => {
    await writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const webhook = await requireWebhook(trx, request.params.project_id, request.params.webhook_id);
      await deleteWebhook(trx, webhook.id);
      record(change('webhook.deleted', webhook, null));
    });
    return reply.code(204).send(null);
  });

  app.post(`${base}/:webhook_id/test`, {
    config: { role: 'owner' },
    schema: { tags, params: WebhookParams, response: { 202: Type.Object({ message: Type.String() }), ...errorResponses(401, 403, 404, 409, 429) } },
  }, async (request, reply) => {
    const webhook = await requireWebhook(db, request.params.project_id, request.params.webhook_id);
    if (!webhook.enabled) throw new Conflict('The webhook is disabled: a disabled webhook receives nothing');
    const retryAfter = await enqueueTest(db, config.database.kind, webhook, request.actor);
    if (retryAfter !== null) throw tooManyByHand(retryAfter);
    webhooks.wake();
    return reply.code(202).send({ message: 'A webhook.test event is on its way' });
  });

  app.get(`${base}/:webhook_id/deliveries`, {
    config: { role: 'owner' },
    schema: { tags, params: WebhookParams, querystring: DeliveryQuery, response: { 200: DeliveryPage, ...errorResponses(400, 401, 403, 404) } },
  }, async (request) => {
    const webhook = await requireWebhook(db, request.params.project_id, request.params.webhook_id);
    return listAttempts(db, webhook.id, { limit: request.query.limit ?? 50, cursor: request.query.cursor });
  });

  // For the dashboard: send a logged delivery's event again (docs/api.md, Webhooks).
  app.post(`${base}/:webhook_id/deliveries/:delivery_id/resend`, {
    config: { role: 'owner' },
    schema: { tags, params: DeliveryParams, response: { 202: Type.Object({ message: Type.String() }), ...errorResponses(401, 403, 404, 409, 429) } },
  }, async (request, reply) => {
    const webhook = await requireWebhook(db, request.params.project_id, request.params.webhook_id);
    if (!webhook.enabled) throw new Conflict('The webhook is disabled: a disabled webhook receives nothing');
    const retryAfter = await resendAttempt(db, config.database.kind, webhook.id, request.params.delivery_id);
    if (retryAfter === undefined) throw new NotFound('Delivery not found');
    if (retryAfter !== null) throw tooManyByHand(retryAfter);
    webhooks.wake();
    return reply.code(202).send({ message: 'The event is on its way again' });
  });
};

import { Type } from 'typebox';
import { Timestamp, Uuid } from '../../http/schemas.js';
import { AuditActionRef } from '../changes/changes.schemas.js';

const Url = Type.String({ minLength: 1, maxLength: 2000, description: 'http or https' });
/** An audit action (docs/api.md) such as flag.toggled, or * for every event. */
const EventName = Type.Union([Type.Literal('*'), AuditActionRef]);
const Events = Type.Array(EventName, { minItems: 1, maxItems: 100 });
const WebhookDescription = Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]);

export const Webhook = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    url: Type.String(),
    events: Type.Array(EventName),
    description: Type.Union([Type.String(), Type.Null()]),
    enabled: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Webhook' },
);

export const CreatedWebhook = Type.Object({ ...Webhook.properties, secret: Type.String({ description: 'HMAC-SHA256 key; shown only here' }) });

export const CreateWebhookBody = Type.Object({
  url: Url,
  events: Type.Optional(Events),
  description: Type.Optional(WebhookDescription),
  enabled: Type.Optional(Type.Boolean()),
});

export const UpdateWebhookBody = Type.Object({
  url: Type.Optional(Url),
  events: Type.Optional(Events),
  description: Type.Optional(WebhookDescription),
  enabled: Type.Optional(Type.Boolean()),
});

export const WebhookParams = Type.Object({ project_id: Uuid, webhook_id: Uuid });
export const DeliveryParams = Type.Object({ project_id: Uuid, webhook_id: Uuid, delivery_id: Uuid });

export const Delivery = Type.Object({
  id: Uuid,
  event_id: Uuid,
  action: AuditActionRef,
  attempt: Type.Integer(),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  duration_ms: Type.Integer(),
  created_at: Timestamp,
});

export const DeliveryPage = Type.Object({ items: Type.Array(Delivery), next_cursor: Type.Union([Type.String(), Type.Null()]) });
export const DeliveryQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })), cursor: Type.Optional(Type.String({ maxLength: 500 })) });

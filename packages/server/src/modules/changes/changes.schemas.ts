/**
 * The change path's vocabulary (docs/api.md): what a write under a project describes, the event
 * it becomes, and the closed lists of actions and resource types. The audit log stores these
 * events, webhooks deliver them, and OpenAPI (so the dashboard's generated types) lists them.
 */
import { Type } from 'typebox';

export const RESOURCE_TYPES = ['project', 'environment', 'flag', 'rule', 'segment', 'member', 'webhook', 'schedule', 'change_request', 'metric', 'experiment', 'release'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

/** Every audit action: `<resource>.<verb>`. `webhook.test` is sent to one webhook, never stored. */
export const AUDIT_ACTIONS = [
  'project.created',
  'project.updated',
  'project.key_regenerated',
  'environment.created',
  'environment.updated',
  'environment.deleted',
  'flag.created',
  'flag.updated',
  'flag.toggled',
  'flag.deleted',
  'rule.created',
  'rule.updated',
  'rule.deleted',
  'segment.created',
  'segment.updated',
  'segment.deleted',
  'member.added',
  'member.joined',
  'member.updated',
  'member.removed',
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.test',
  'schedule.created',
  'schedule.cancelled',
  'schedule.failed',
  'change_request.created',
  'change_request.updated',
  'change_request.reviewed',
  'change_request.applied',
  'change_request.rejected',
  'change_request.cancelled',
  'change_request.outdated',
  'change_request.failed',
  'metric.created',
  'metric.updated',
  'metric.deleted',
  'experiment.created',
  'experiment.started',
  'experiment.stopped',
  'experiment.deleted',
  'release.created',
  'release.advanced',
  'release.paused',
  'release.resumed',
  'release.rolled_back',
  'release.aborted',
  'release.completed',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const ResourceTypeSchema = Type.Enum([...RESOURCE_TYPES], { $id: 'ResourceType' });
export const AuditActionSchema = Type.Enum([...AUDIT_ACTIONS], { $id: 'AuditAction', description: '<resource>.<verb>, e.g. flag.toggled' });

/** Who made a change: the user, and the API token when one was used (null for a login). */
export interface Actor {
  user_id: string | null;
  email: string | null;
  token_id: string | null;
}

/** Someone who approved a change request (docs/change-management.md). */
export interface Approver {
  user_id: string;
  email: string;
}

/**
 * What a whole write was part of, carried by each of its events: an import (its id, one per
 * import, docs/flags-as-code.md), a scheduled change it applies, or an approved change request it
 * applies with who approved it (docs/change-management.md). Empty for a plain API call.
 */
export interface ChangeOrigin {
  import_id?: string;
  schedule_id?: string;
  change_request_id?: string;
  /** With change_request_id: who approved the request's content. */
  approvers?: Approver[];
  /** The guarded release that makes the change (its steps and rollback: docs/releases.md). */
  release_id?: string;
}

/** One change as a write describes it. before / after are the resource's API objects. */
export interface Change {
  action: AuditAction;
  resource_type: ResourceType;
  resource_id: string;
  resource_key?: string | null;
  environment_id?: string | null;
  before: object | null;
  after: object | null;
}

/** A change as recorded: what the audit log lists and webhooks deliver. */
export interface ChangeEvent {
  id: string;
  project_id: string;
  environment_id: string | null;
  action: AuditAction;
  resource_type: ResourceType;
  resource_id: string;
  resource_key: string | null;
  actor: Actor;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  /** The import that made this change, else null. */
  import_id: string | null;
  /** The scheduled change it applied, else null. */
  schedule_id: string | null;
  /** The change request the write applied (or found failing), else null. */
  change_request_id: string | null;
  /** With change_request_id, when it applied the request: who approved it; else null. */
  approvers: Approver[] | null;
  /** The guarded release that made the change, else null. */
  release_id: string | null;
  created_at: string;
}

/** An update that changes nothing but its timestamp is not an event. */
export function changesNothing(change: Change): boolean {
  if (change.before === null || change.after === null) return false;
  const { updated_at: _b, ...before } = change.before as Record<string, unknown>;
  const { updated_at: _a, ...after } = change.after as Record<string, unknown>;
  // Top-level keys sorted; nested values as they are (a replacer array would also filter nested
  // objects' keys, so a change inside a rule's conditions or a flag's variants went unrecorded).
  const canonical = (value: Record<string, unknown>) => JSON.stringify(Object.keys(value).sort().map((key) => [key, value[key]]));
  return canonical(before) === canonical(after);
}


/** References to the two schemas above (registered once by app.ts), typed for handlers. */
export const AuditActionRef = Type.Unsafe<AuditAction>(Type.Ref('AuditAction'));
export const ResourceTypeRef = Type.Unsafe<ResourceType>(Type.Ref('ResourceType'));

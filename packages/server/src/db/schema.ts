import type { ColumnType, Generated } from 'kysely';

/**
 * Table shapes shared by both dialects. Reads differ by driver (SQLite gives 0/1 and ISO text,
 * PostgreSQL gives booleans and Dates), so rows pass through toBool/toIso in values.ts.
 */
export type Bool = ColumnType<boolean | number, boolean, boolean>;
export type Timestamp = ColumnType<string | Date, string, string>;

export interface UsersTable {
  id: string;
  email: string;
  password_hash: string;
  /** Bumped by a password reset; login tokens carry it, so older tokens stop working. */
  token_version: Generated<number>;
  created_at: Timestamp;
  /** When the address was proven (docs/security.md); null: unverified. */
  email_verified_at: Timestamp | null;
}

/**
 * An account at the OpenID provider (issuer + its `sub`) that signs in as this user (docs/security.md).
 * A user made by a first OpenID sign-in has no password: its password_hash is '' (matches nothing).
 */
export interface OidcIdentitiesTable {
  issuer: string;
  subject: string;
  user_id: string;
  /** The verified email the provider gave when the identity was linked. */
  email: string;
  created_at: Timestamp;
  last_sign_in_at: Timestamp;
}

/** A single-use emailed link that proves the address (docs/security.md); only the token's hash is kept. */
export interface EmailVerificationsTable {
  token_hash: string;
  user_id: string;
  expires_at: Timestamp;
  used_at: Timestamp | null;
  created_at: Timestamp;
}

/** The secret of an address's invitations (docs/security.md): one per address, replaced by each new invitation. */
export interface InvitationTokensTable {
  email: string;
  token_hash: string;
  /** The invitation whose email carried the link: signing up with it accepts that one (docs/adr/0011-proven-addresses.md). */
  member_id: ColumnType<string | null, string | null | undefined, string | null>;
  expires_at: Timestamp;
  created_at: Timestamp;
}

/** Login tokens ended by log out, kept until they would have expired anyway. */
export interface RevokedLoginTokensTable {
  jti: string;
  user_id: string;
  expires_at: Timestamp;
}

export interface SettingsTable {
  key: string;
  value: string;
}

export interface PasswordResetsTable {
  token_hash: string;
  user_id: string;
  expires_at: Timestamp;
  used_at: Timestamp | null;
  created_at: Timestamp;
}

export interface ProjectsTable {
  id: string;
  owner_id: string;
  name: string;
  description: string | null;
  sdk_key: string;
  revision: ColumnType<number | string, never, number | string>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface EnvironmentsTable {
  id: string;
  project_id: string;
  name: string;
  key: string;
  /** Approvals a change request needs before changes reach this environment; 0: direct writes (docs/change-management.md). */
  approvals_required: ColumnType<number, number | undefined, number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface FlagsTable {
  id: string;
  project_id: string;
  environment_id: string;
  name: string;
  key: string;
  description: string | null;
  enabled: Bool;
  rollout_percentage: number;
  everyone_else: ColumnType<string, string | undefined, string>;
  /** docs/variants.md: a JSON array of {key, value, weight, description?}; null: no variants. */
  variants: JsonVariants;
  off_variant: ColumnType<string | null, string | null | undefined, string | null>;
  /** Counts the flag's changes, its rules' included (a change request records it, docs/change-management.md). */
  revision: ColumnType<number, number | undefined, number>;
  /** Replaces the key in the rollout and variant hashes; null: the key (docs/flags-as-code.md). */
  bucketing_key: ColumnType<string | null, string | null | undefined, string | null>;
  /** docs/prerequisites.md: a JSON array of {flag_key, enabled, variants?}; null: none. */
  prerequisites: ColumnType<string | object[] | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface RulesTable {
  id: string;
  flag_id: string;
  rule_type: string;
  /** '' for a conditions rule. */
  rule_value: string;
  enabled: Bool;
  priority: number;
  /** A conditions rule's conditions (docs/targeting.md), else null. */
  conditions: JsonConditions;
  rollout_percentage: ColumnType<number, number | undefined, number>;
  serve: ColumnType<boolean | number, boolean | undefined, boolean>;
  /** The flag variant's key the rule serves (docs/variants.md), else null. */
  variant: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** A JSON array of variants: text on SQLite, parsed by pg for jsonb. */
export type JsonVariants = ColumnType<string | object[] | null, string | null | undefined, string | null>;

/** A JSON array of conditions: text on SQLite, parsed by pg for jsonb. */
export type JsonConditions = ColumnType<string | object[] | null, string | null | undefined, string | null>;

export interface SegmentsTable {
  id: string;
  project_id: string;
  key: string;
  name: string;
  description: string | null;
  conditions: ColumnType<string | object[], string, string>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/**
 * The flag list of an environment as evaluated, in answer order: JSON arrays, written as JSON
 * text; read back as text (SQLite) or parsed (PostgreSQL jsonb).
 */
export type JsonArray = ColumnType<string | string[], string, string>;

export interface EvaluationSnapshotsTable {
  id: string;
  environment_id: string;
  flag_ids: JsonArray;
  flag_keys: JsonArray;
  /** Per flag, its variant keys in the flag's order, or null for a flag without variants; null when no flag had any. */
  flag_variants: ColumnType<string | (string[] | null)[] | null, string | null | undefined, string | null>;
  /** Per flag, its prerequisites' keys in order (null: none); null when no flag has any. */
  flag_prerequisites: ColumnType<string | (string[] | null)[] | null, string | null | undefined, string | null>;
  created_at: Timestamp;
}

/**
 * One row per evaluate request: byte i of outcomes is the outcome code of flag i of the snapshot.
 * Snapshots keep flag ids and keys: history outlives a deleted flag.
 */
export interface EvaluationsTable {
  id: Generated<number | string>;
  environment_id: string;
  snapshot_id: string;
  user_id: string | null;
  outcomes: Uint8Array;
  evaluated_at: Timestamp;
}

export interface EvaluationCountsTable {
  flag_id: string;
  hour_start: Timestamp;
  environment_id: string;
  flag_key: string;
  enabled_count: ColumnType<number | string, number, number>;
  disabled_count: ColumnType<number | string, number, number>;
}

/** Per flag, hour and variant: how often the variant was served (docs/variants.md). */
export interface EvaluationVariantCountsTable {
  flag_id: string;
  hour_start: Timestamp;
  variant: string;
  environment_id: string;
  flag_key: string;
  count: ColumnType<number | string, number, number>;
}

/** A custom attribute name an environment's evaluate requests carried (values are never kept). */
export interface EnvironmentAttributesTable {
  environment_id: string;
  name: string;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
}

/** A usage report already counted (docs/local-evaluation.md): its id, and what its answer said. */
export interface UsageReportsTable {
  environment_id: string;
  report_id: string;
  accepted: number;
  ended_at: Timestamp;
}

export type Role = 'viewer' | 'editor' | 'owner';

/** A membership, or an invitation while user_id is null. */
export interface ProjectMembersTable {
  id: string;
  project_id: string;
  user_id: string | null;
  email: string;
  role: Role;
  /** An invitation's inviter (their email), shown to the invitee; null for a membership made otherwise. */
  invited_by: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
}

export interface ApiTokensTable {
  id: string;
  user_id: string;
  name: string;
  /** SHA-256 of the secret, hex. */
  token_hash: string;
  project_id: string | null;
  role: Role | null;
  created_at: Timestamp;
  expires_at: Timestamp | null;
  last_used_at: Timestamp | null;
}

/** A JSON object column: text on SQLite, parsed by pg for jsonb. */
export type JsonObject = ColumnType<string | Record<string, unknown> | null, string | null, string | null>;

export interface AuditEventsTable {
  id: string;
  project_id: string;
  environment_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string;
  resource_key: string | null;
  actor_user_id: string | null;
  actor_email: string | null;
  actor_token_id: string | null;
  before: JsonObject;
  after: JsonObject;
  /** The import that made the change (docs/flags-as-code.md); null for any other write. */
  import_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** The scheduled change the change applied (docs/change-management.md), else null. */
  schedule_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** The change request the write applied (or found failing), else null. */
  change_request_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** With change_request_id, when it applied the request: who approved it, as JSON; else null. */
  approvers: ColumnType<string | object[] | null, string | null | undefined, string | null>;
  /** The guarded release that made the change (docs/releases.md), else null. */
  release_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
}

/** A change prepared now and applied at `at` (docs/change-management.md). */
export interface SchedulesTable {
  id: string;
  project_id: string;
  environment_id: string;
  flag_id: string;
  flag_key: string;
  at: Timestamp;
  /** A PUT body of the flag, as JSON. */
  change: ColumnType<string | Record<string, unknown>, string, string>;
  note: string | null;
  status: 'pending' | 'applied' | 'failed' | 'cancelled';
  created_by_user_id: string;
  created_by_email: string;
  created_by_token_id: string | null;
  /** The change request whose approval created it, else null. */
  change_request_id: string | null;
  error: string | null;
  /** While an instance applies it: others leave it until then. */
  claimed_until: Timestamp | null;
  created_at: Timestamp;
  applied_at: Timestamp | null;
}

export interface ChangeRequestsTable {
  id: string;
  project_id: string;
  environment_id: string;
  title: string;
  description: string | null;
  /** The list of changes as sent, as JSON. */
  changes: ColumnType<string | object[], string, string>;
  apply_at: Timestamp | null;
  status: string;
  /** Moves with every edit of changes or apply_at: an approval counts only for the version it saw. */
  version: number;
  author_user_id: string;
  author_email: string;
  author_token_id: string | null;
  /** Per change, the before and after of its resource: as foreseen, then as applied. */
  diff: ColumnType<string | object[], string, string>;
  error: string | null;
  claimed_until: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  applied_at: Timestamp | null;
}

export interface ChangeRequestReviewsTable {
  id: string;
  change_request_id: string;
  version: number;
  user_id: string;
  email: string;
  token_id: string | null;
  decision: 'approve' | 'reject';
  comment: string | null;
  created_at: Timestamp;
}

/** The flags a change request touches, each with its revision when the request was last based. */
export interface ChangeRequestFlagsTable {
  change_request_id: string;
  flag_id: string;
  revision: number;
}

export interface WebhooksTable {
  id: string;
  project_id: string;
  url: string;
  secret: string;
  events: JsonArray;
  description: string | null;
  enabled: Bool;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookDeliveriesTable {
  id: string;
  webhook_id: string;
  event_id: string;
  action: string;
  /** The JSON body sent, the same on every retry. */
  payload: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: Generated<number>;
  /** A test send or a resend: counted against the webhook's 10 a minute. */
  by_hand: ColumnType<boolean | number, boolean | undefined, boolean>;
  next_attempt_at: Timestamp;
  created_at: Timestamp;
}

export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  webhook_id: string;
  event_id: string;
  action: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  created_at: Timestamp;
}

/** A project's metric (docs/experiments.md): what an experiment measures, from one event name. */
export interface MetricsTable {
  id: string;
  project_id: string;
  key: string;
  name: string;
  event: string;
  kind: string;
  better: string;
  window_hours: number | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** An experiment on a flag in one environment (docs/experiments.md). flag_id: no foreign key, it outlives its flag. */
export interface ExperimentsTable {
  id: string;
  project_id: string;
  environment_id: string;
  flag_id: string;
  flag_key: string;
  name: string;
  hypothesis: string | null;
  control: string;
  alpha: number;
  sequential: Bool;
  sequential_tuning: number;
  cuped: Bool;
  cuped_lookback_days: number;
  min_units: number;
  status: string;
  /** Each arm's expected share, fixed at start, as JSON; null before. */
  expected_shares: ColumnType<string | Record<string, number> | null, string | null, string | null>;
  decision: string | null;
  note: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  started_at: Timestamp | null;
  stopped_at: Timestamp | null;
}

export interface ExperimentMetricsTable {
  experiment_id: string;
  metric_id: string;
  role: string;
  /** Its place in the experiment's list, as sent. */
  position: number;
}

/** A unit served an arm of a flag that a running experiment watches (docs/experiments.md). `at`: epoch ms. */
export interface ExposuresTable {
  id: Generated<number>;
  environment_id: string;
  flag_key: string;
  /** units.id */
  unit_id: number;
  arm: string;
  at: ColumnType<number | string, number, number>;
}

/** Something a unit did, with its value (1 when none was sent). `at`: epoch ms. */
export interface EventsTable {
  id: Generated<number>;
  environment_id: string;
  name: string;
  /** units.id */
  unit_id: number;
  value: number;
  at: ColumnType<number | string, number, number>;
}

/** An environment's unit identifiers, each once (0018_units): exposures and events name a unit by its id. */
export interface UnitsTable {
  id: Generated<number>;
  environment_id: string;
  unit: string;
}

/** An experiment's latest computed results, as GET .../results answers them (JSON). */
export interface ExperimentResultsTable {
  experiment_id: string;
  computed_at: Timestamp;
  results: ColumnType<string | object, string, string>;
}

/** A guarded release of a flag in one environment (docs/releases.md). JSON columns as the API shows them. */
export interface ReleasesTable {
  id: string;
  project_id: string;
  environment_id: string;
  flag_id: string;
  flag_key: string;
  steps: ColumnType<string | number[], string, string>;
  hold_seconds: number;
  check_seconds: number;
  min_units: number;
  guardrails: ColumnType<string | object[], string, string>;
  treatment: string;
  control: string;
  status: string;
  /** Index into steps. */
  current_step: number;
  /** Epoch ms each reached step started, by index. */
  step_started: ColumnType<string | number[], string, string>;
  /** The flag's fields a rollback restores. */
  flag_before: ColumnType<string | Record<string, unknown>, string, string>;
  reason: string | null;
  created_by_user_id: string | null;
  created_by_email: string | null;
  change_request_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  ended_at: Timestamp | null;
  next_check_at: Timestamp | null;
  claimed_until: Timestamp | null;
}

/** One check of a release, with every figure it decided on (JSON). */
export interface ReleaseChecksTable {
  id: string;
  release_id: string;
  at: Timestamp;
  figures: ColumnType<string | Record<string, unknown>, string, string>;
}

export interface Schema {
  users: UsersTable;
  email_verifications: EmailVerificationsTable;
  invitation_tokens: InvitationTokensTable;
  revoked_login_tokens: RevokedLoginTokensTable;
  oidc_identities: OidcIdentitiesTable;
  settings: SettingsTable;
  password_resets: PasswordResetsTable;
  projects: ProjectsTable;
  environments: EnvironmentsTable;
  flags: FlagsTable;
  rules: RulesTable;
  segments: SegmentsTable;
  evaluation_snapshots: EvaluationSnapshotsTable;
  evaluations: EvaluationsTable;
  evaluation_counts: EvaluationCountsTable;
  evaluation_variant_counts: EvaluationVariantCountsTable;
  environment_attributes: EnvironmentAttributesTable;
  usage_reports: UsageReportsTable;
  project_members: ProjectMembersTable;
  api_tokens: ApiTokensTable;
  audit_events: AuditEventsTable;
  schedules: SchedulesTable;
  change_requests: ChangeRequestsTable;
  change_request_reviews: ChangeRequestReviewsTable;
  change_request_flags: ChangeRequestFlagsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  metrics: MetricsTable;
  experiments: ExperimentsTable;
  experiment_metrics: ExperimentMetricsTable;
  exposures: ExposuresTable;
  events: EventsTable;
  units: UnitsTable;
  experiment_results: ExperimentResultsTable;
  releases: ReleasesTable;
  release_checks: ReleaseChecksTable;
}

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
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface RulesTable {
  id: string;
  flag_id: string;
  rule_type: string;
  rule_value: string;
  enabled: Bool;
  priority: number;
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

export interface Schema {
  users: UsersTable;
  settings: SettingsTable;
  password_resets: PasswordResetsTable;
  projects: ProjectsTable;
  environments: EnvironmentsTable;
  flags: FlagsTable;
  rules: RulesTable;
  evaluation_snapshots: EvaluationSnapshotsTable;
  evaluations: EvaluationsTable;
  evaluation_counts: EvaluationCountsTable;
}

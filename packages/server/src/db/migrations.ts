import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type Migration } from 'kysely';

export type Dialect = 'sqlite' | 'postgres';

/**
 * One set of migrations for both dialects: Kysely's schema builder writes the DDL, and only the
 * column types differ (native uuid, timestamptz and boolean on PostgreSQL).
 */
export function migrations(dialect: Dialect): Record<string, Migration> {
  const pg = dialect === 'postgres';
  const uuid = pg ? 'uuid' : 'text';
  const timestamp = pg ? 'timestamptz' : 'text';
  const bool = pg ? 'boolean' : 'integer';
  const json = pg ? 'jsonb' : 'text';
  const falseValue = pg ? sql`false` : sql`0`;
  const trueValue = pg ? sql`true` : sql`1`;

  return {
    '0001_initial': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('users')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('email', 'text', (c) => c.notNull().unique())
          .addColumn('password_hash', 'text', (c) => c.notNull())
          .addColumn('token_version', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .execute();

        await db.schema
          .createTable('settings')
          .addColumn('key', 'text', (c) => c.primaryKey())
          .addColumn('value', 'text', (c) => c.notNull())
          .execute();

        await db.schema
          .createTable('password_resets')
          .addColumn('token_hash', 'text', (c) => c.primaryKey())
          .addColumn('user_id', uuid, (c) => c.notNull().references('users.id').onDelete('cascade'))
          .addColumn('expires_at', timestamp, (c) => c.notNull())
          .addColumn('used_at', timestamp)
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .execute();

        await db.schema
          .createTable('projects')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('owner_id', uuid, (c) => c.notNull().references('users.id').onDelete('cascade'))
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('description', 'text')
          .addColumn('sdk_key', 'text', (c) => c.notNull().unique())
          // Bumped by every write to the project or anything in it: instances compare it with the
          // revision they compiled, a safety net under change notifications.
          .addColumn('revision', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addColumn('updated_at', timestamp, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('projects_owner_idx').on('projects').columns(['owner_id', 'created_at']).execute();

        await db.schema
          .createTable('environments')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('project_id', uuid, (c) => c.notNull().references('projects.id').onDelete('cascade'))
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('key', 'text', (c) => c.notNull())
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addColumn('updated_at', timestamp, (c) => c.notNull())
          .addUniqueConstraint('environments_project_key_unique', ['project_id', 'key'])
          .execute();

        await db.schema
          .createTable('flags')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('project_id', uuid, (c) => c.notNull().references('projects.id').onDelete('cascade'))
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('key', 'text', (c) => c.notNull())
          .addColumn('description', 'text')
          .addColumn('enabled', bool, (c) => c.notNull().defaultTo(falseValue))
          .addColumn('rollout_percentage', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addColumn('updated_at', timestamp, (c) => c.notNull())
          .addUniqueConstraint('flags_environment_key_unique', ['environment_id', 'key'])
          .execute();
        await db.schema.createIndex('flags_project_idx').on('flags').column('project_id').execute();

        await db.schema
          .createTable('rules')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('flag_id', uuid, (c) => c.notNull().references('flags.id').onDelete('cascade'))
          .addColumn('rule_type', 'text', (c) => c.notNull())
          .addColumn('rule_value', 'text', (c) => c.notNull())
          .addColumn('enabled', bool, (c) => c.notNull().defaultTo(trueValue))
          .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addColumn('updated_at', timestamp, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('rules_flag_idx').on('rules').column('flag_id').execute();

        // History is stored one row per evaluate request, not per flag: the flags' outcomes are
        // packed one byte each (packages/engine/src/outcomes.ts), against a snapshot of the environment's flag
        // list. The read API expands them to one item per evaluated flag (docs/adr/0002).
        await db.schema
          .createTable('evaluation_snapshots')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('flag_ids', json, (c) => c.notNull())
          .addColumn('flag_keys', json, (c) => c.notNull())
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('evaluation_snapshots_environment_idx').on('evaluation_snapshots').column('environment_id').execute();

        await db.schema
          .createTable('evaluations')
          .addColumn('id', pg ? 'bigint' : 'integer', (c) => (pg ? c.primaryKey().generatedAlwaysAsIdentity() : c.primaryKey()))
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('snapshot_id', uuid, (c) => c.notNull().references('evaluation_snapshots.id').onDelete('cascade'))
          .addColumn('user_id', 'text')
          .addColumn('outcomes', pg ? 'bytea' : 'blob', (c) => c.notNull())
          .addColumn('evaluated_at', timestamp, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('evaluations_environment_time_idx').on('evaluations').columns(['environment_id', 'evaluated_at']).execute();

        // Per flag and hour, counted for every evaluation, even one whose row had to be dropped.
        await db.schema
          .createTable('evaluation_counts')
          .addColumn('flag_id', uuid, (c) => c.notNull())
          .addColumn('hour_start', timestamp, (c) => c.notNull())
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('flag_key', 'text', (c) => c.notNull())
          .addColumn('enabled_count', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('disabled_count', 'bigint', (c) => c.notNull().defaultTo(0))
          .addPrimaryKeyConstraint('evaluation_counts_pk', ['flag_id', 'hour_start'])
          .execute();
        await db.schema.createIndex('evaluation_counts_environment_idx').on('evaluation_counts').columns(['environment_id', 'hour_start']).execute();
      },
    },
    '0002_history_at_size': {
      async up(db: Kysely<any>) {
        // Deleting a snapshot (environment delete, prune) checks evaluations.snapshot_id: without
        // an index, one scan of the whole history table per snapshot.
        await db.schema.createIndex('evaluations_snapshot_idx').on('evaluations').column('snapshot_id').execute();
        // Per-flag counts read by key (also after the flag is deleted).
        await db.schema.createIndex('evaluation_counts_key_idx').on('evaluation_counts').columns(['environment_id', 'flag_key', 'hour_start']).execute();
        // A successful reset uses up the user's other reset tokens.
        await db.schema.createIndex('password_resets_user_idx').on('password_resets').column('user_id').execute();
      },
    },
    // Members, API tokens, the audit log, webhooks.
    '0003_teams': {
      async up(db: Kysely<any>) {
        // A membership, or an invitation while user_id is null (the email is the invitee's).
        await db.schema
          .createTable('project_members')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('project_id', uuid, (c) => c.notNull().references('projects.id').onDelete('cascade'))
          .addColumn('user_id', uuid, (c) => c.references('users.id').onDelete('cascade'))
          .addColumn('email', 'text', (c) => c.notNull())
          .addColumn('role', 'text', (c) => c.notNull())
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addUniqueConstraint('project_members_project_email_unique', ['project_id', 'email'])
          .execute();
        await db.schema.createIndex('project_members_user_idx').on('project_members').columns(['user_id', 'project_id']).execute();
        await db.schema.createIndex('project_members_email_idx').on('project_members').column('email').execute();
        // Every project's creator becomes its owner (nothing else changes).
        const creators = await db
          .selectFrom('projects')
          .innerJoin('users', 'users.id', 'projects.owner_id')
          .select(['projects.id as project_id', 'users.id as user_id', 'users.email', 'projects.created_at'])
          .execute();
        for (const row of creators) {
          await db.insertInto('project_members').values({ id: randomUUID(), ...row, role: 'owner' }).execute();
        }

        await db.schema
          .createTable('api_tokens')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('user_id', uuid, (c) => c.notNull().references('users.id').onDelete('cascade'))
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('token_hash', 'text', (c) => c.notNull().unique())
          .addColumn('project_id', uuid, (c) => c.references('projects.id').onDelete('cascade'))
          .addColumn('role', 'text')
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addColumn('expires_at', timestamp)
          .addColumn('last_used_at', timestamp)
          .execute();
        await db.schema.createIndex('api_tokens_user_idx').on('api_tokens').columns(['user_id', 'created_at']).execute();

        // No foreign key to environments or users: an event outlives what it describes.
        await db.schema
          .createTable('audit_events')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('project_id', uuid, (c) => c.notNull().references('projects.id').onDelete('cascade'))
          .addColumn('environment_id', uuid)
          .addColumn('action', 'text', (c) => c.notNull())
          .addColumn('resource_type', 'text', (c) => c.notNull())
          .addColumn('resource_id', uuid, (c) => c.notNull())
          .addColumn('resource_key', 'text')
          .addColumn('actor_user_id', uuid)
          .addColumn('actor_email', 'text')
          .addColumn('actor_token_id', uuid)
          .addColumn('before', json)
          .addColumn('after', json)
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('audit_events_project_time_idx').on('audit_events').columns(['project_id', 'created_at', 'id']).execute();

        await db.schema
          .createTable('webhooks')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('project_id', uuid, (c) => c.notNull().references('projects.id').onDelete('cascade'))
          .addColumn('url', 'text', (c) => c.notNull())
          .addColumn('secret', 'text', (c) => c.notNull())
          .addColumn('events', json, (c) => c.notNull())
          .addColumn('description', 'text')
          .addColumn('enabled', bool, (c) => c.notNull().defaultTo(trueValue))
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addColumn('updated_at', timestamp, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('webhooks_project_idx').on('webhooks').column('project_id').execute();

        // The outbox: one row per (event, webhook), written in the change's transaction.
        await db.schema
          .createTable('webhook_deliveries')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('webhook_id', uuid, (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
          .addColumn('event_id', uuid, (c) => c.notNull())
          .addColumn('action', 'text', (c) => c.notNull())
          .addColumn('payload', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('next_attempt_at', timestamp, (c) => c.notNull())
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('webhook_deliveries_due_idx').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();

        // The delivery log: one row per attempt.
        await db.schema
          .createTable('webhook_attempts')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('delivery_id', uuid, (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
          .addColumn('webhook_id', uuid, (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
          .addColumn('event_id', uuid, (c) => c.notNull())
          .addColumn('action', 'text', (c) => c.notNull())
          .addColumn('attempt', 'integer', (c) => c.notNull())
          .addColumn('status_code', 'integer')
          .addColumn('error', 'text')
          .addColumn('duration_ms', 'integer', (c) => c.notNull())
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('webhook_attempts_webhook_time_idx').on('webhook_attempts').columns(['webhook_id', 'created_at', 'id']).execute();
      },
    },
    '0004_webhook_deliveries_by_webhook': {
      async up(db: Kysely<any>) {
        // A webhook's test sends of the last minute are counted (at most 10, docs/api.md "Webhooks"), and
        // deleting a webhook deletes its deliveries: both read them by webhook.
        await db.schema.createIndex('webhook_deliveries_webhook_time_idx').on('webhook_deliveries').columns(['webhook_id', 'created_at']).execute();
      },
    },
    // Proven addresses, invitation secrets, log out (docs/security.md, "Accounts, invitations and sessions").
    '0005_proven_addresses': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('users').addColumn('email_verified_at', timestamp).execute();

        await db.schema
          .createTable('email_verifications')
          .addColumn('token_hash', 'text', (c) => c.primaryKey())
          .addColumn('user_id', uuid, (c) => c.notNull().references('users.id').onDelete('cascade'))
          .addColumn('expires_at', timestamp, (c) => c.notNull())
          .addColumn('used_at', timestamp)
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('email_verifications_user_idx').on('email_verifications').column('user_id').execute();

        await db.schema
          .createTable('invitation_tokens')
          .addColumn('email', 'text', (c) => c.primaryKey())
          .addColumn('token_hash', 'text', (c) => c.notNull().unique())
          .addColumn('expires_at', timestamp, (c) => c.notNull())
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .execute();

        await db.schema
          .createTable('revoked_login_tokens')
          .addColumn('jti', 'text', (c) => c.primaryKey())
          .addColumn('user_id', uuid, (c) => c.notNull().references('users.id').onDelete('cascade'))
          .addColumn('expires_at', timestamp, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('revoked_login_tokens_expiry_idx').on('revoked_login_tokens').column('expires_at').execute();

        // Accounts from before: nothing proved their address except a completed password reset,
        // so only those count as verified, since that reset (docs/adr/0011-proven-addresses.md).
        const lastReset = (eb: any) =>
          eb.selectFrom('password_resets').select((r: any) => r.fn.max('used_at').as('used_at')).whereRef('password_resets.user_id', '=', 'users.id');
        await db
          .updateTable('users')
          .set((eb) => ({ email_verified_at: lastReset(eb) }))
          .where((eb) => eb.exists(eb.selectFrom('password_resets').select('token_hash').whereRef('password_resets.user_id', '=', 'users.id').where('used_at', 'is not', null)))
          .execute();
        // API tokens belong to verified accounts and were made after the proof: others may be a pre-claimer's.
        await db
          .deleteFrom('api_tokens')
          .where((eb) =>
            eb.or([
              eb('user_id', 'in', eb.selectFrom('users').select('id').where('email_verified_at', 'is', null)),
              eb('created_at', '<', eb.selectFrom('users').select('email_verified_at').whereRef('users.id', '=', 'api_tokens.user_id')),
            ]),
          )
          .execute();
        // An unverified account is a member of its own projects only: elsewhere its membership
        // waits as an invitation, accepted when the address is verified.
        await db
          .updateTable('project_members')
          .set({ user_id: null })
          .where((eb) =>
            eb.and([
              eb('user_id', 'in', eb.selectFrom('users').select('id').where('email_verified_at', 'is', null)),
              eb('user_id', '<>', eb.selectFrom('projects').select('owner_id').whereRef('projects.id', '=', 'project_members.project_id')),
            ]),
          )
          .execute();
      },
    },
    // Targeting on any attribute, and segments (docs/targeting.md). Rules of the seed's types
    // keep their columns; a conditions rule stores '' as its rule_value (the API shows null).
    '0006_targeting': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('rules').addColumn('conditions', json).execute();
        await db.schema.alterTable('rules').addColumn('rollout_percentage', 'integer', (c) => c.notNull().defaultTo(100)).execute();
        await db.schema.alterTable('rules').addColumn('serve', bool, (c) => c.notNull().defaultTo(trueValue)).execute();
        await db.schema.alterTable('flags').addColumn('everyone_else', 'text', (c) => c.notNull().defaultTo('rollout')).execute();

        await db.schema
          .createTable('segments')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('project_id', uuid, (c) => c.notNull().references('projects.id').onDelete('cascade'))
          .addColumn('key', 'text', (c) => c.notNull())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('description', 'text')
          .addColumn('conditions', json, (c) => c.notNull())
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addColumn('updated_at', timestamp, (c) => c.notNull())
          .addUniqueConstraint('segments_project_key_unique', ['project_id', 'key'])
          .execute();
      },
    },
    // Sign-in with OpenID Connect (docs/security.md): which provider account is which user.
    '0007_oidc_identities': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('oidc_identities')
          .addColumn('issuer', 'text', (c) => c.notNull())
          .addColumn('subject', 'text', (c) => c.notNull())
          .addColumn('user_id', uuid, (c) => c.notNull().references('users.id').onDelete('cascade'))
          .addColumn('email', 'text', (c) => c.notNull())
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addColumn('last_sign_in_at', timestamp, (c) => c.notNull())
          .addPrimaryKeyConstraint('oidc_identities_pk', ['issuer', 'subject'])
          .execute();
        await db.schema.createIndex('oidc_identities_user_idx').on('oidc_identities').column('user_id').execute();
      },
    },
    // Variants: flags that serve values (docs/variants.md). A flag without variants keeps
    // variants null and answers as before. History: a snapshot of a flag list with variants keeps
    // each flag's variant keys (null for a flag without), and its rows carry one more byte per flag
    // after the outcome codes: the variant's index in those keys (255: none).
    '0008_variants': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('flags').addColumn('variants', json).execute();
        await db.schema.alterTable('flags').addColumn('off_variant', 'text').execute();
        await db.schema.alterTable('rules').addColumn('variant', 'text').execute();
        await db.schema.alterTable('evaluation_snapshots').addColumn('flag_variants', json).execute();
        await db.schema
          .createTable('evaluation_variant_counts')
          .addColumn('flag_id', uuid, (c) => c.notNull())
          .addColumn('hour_start', timestamp, (c) => c.notNull())
          .addColumn('variant', 'text', (c) => c.notNull())
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('flag_key', 'text', (c) => c.notNull())
          .addColumn('count', 'bigint', (c) => c.notNull().defaultTo(0))
          .addPrimaryKeyConstraint('evaluation_variant_counts_pk', ['flag_id', 'hour_start', 'variant'])
          .execute();
        await db.schema.createIndex('evaluation_variant_counts_environment_idx').on('evaluation_variant_counts').columns(['environment_id', 'hour_start']).execute();
      },
    },
    // The custom attribute names each environment's evaluate and OFREP requests carried (never
    // their values): the rule editor offers them first. At most 200 per environment.
    '0009_attributes_seen': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('environment_attributes')
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('first_seen_at', timestamp, (c) => c.notNull())
          .addColumn('last_seen_at', timestamp, (c) => c.notNull())
          .addPrimaryKeyConstraint('environment_attributes_pk', ['environment_id', 'name'])
          .execute();
      },
    },
    // A security review (docs/security.md): invitations that need consent, by-hand
    // sends counted together, project tokens that keep their creator's role.
    '0010_security_review': {
      async up(db: Kysely<any>) {
        // A test send or a resend (the owner's, by hand): 10 a webhook a minute, counted together.
        await db.schema.alterTable('webhook_deliveries').addColumn('by_hand', bool, (c) => c.notNull().defaultTo(falseValue)).execute();
        await db.updateTable('webhook_deliveries').set({ by_hand: trueValue }).where('action', '=', 'webhook.test').execute();

        // Who sent an invitation (its invitee reads it before accepting); null for a membership.
        await db.schema.alterTable('project_members').addColumn('invited_by', 'text').execute();
        const invitedBy = (eb: any) =>
          eb
            .selectFrom('audit_events')
            .select('actor_email')
            .where('action', '=', 'member.added')
            .whereRef('audit_events.resource_id', '=', 'project_members.id')
            .orderBy('created_at', 'desc')
            .limit(1);
        const creator = (eb: any) => eb.selectFrom('projects').innerJoin('users', 'users.id', 'projects.owner_id').select('users.email').whereRef('projects.id', '=', 'project_members.project_id');
        await db
          .updateTable('project_members')
          .set((eb: any) => ({ invited_by: eb.fn.coalesce(invitedBy(eb), creator(eb)) }))
          .where('user_id', 'is', null)
          .execute();

        // The invitation the newest emailed link was sent for: signing up with it accepts that one.
        await db.schema.alterTable('invitation_tokens').addColumn('member_id', uuid).execute();
        const newest = (eb: any) =>
          eb
            .selectFrom('project_members')
            .select('project_members.id')
            .whereRef('project_members.email', '=', 'invitation_tokens.email')
            .where('project_members.user_id', 'is', null)
            .orderBy('project_members.created_at', 'desc')
            .limit(1);
        await db.updateTable('invitation_tokens').set((eb: any) => ({ member_id: newest(eb) })).execute();

        // A project token without a role did what its user may; now it keeps the role its user had.
        const role = (eb: any) =>
          eb.selectFrom('project_members').select('role').whereRef('project_members.project_id', '=', 'api_tokens.project_id').whereRef('project_members.user_id', '=', 'api_tokens.user_id');
        await db
          .updateTable('api_tokens')
          .set((eb: any) => ({ role: role(eb) }))
          .where('project_id', 'is not', null)
          .where('role', 'is', null)
          .execute();
      },
    },
    // Flags as code (docs/flags-as-code.md): a flag's bucketing key replaces its key in
    // the rollout and variant hashes (null: the key, as before); each audit event of an import
    // carries the import's id.
    '0011_flags_as_code': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('flags').addColumn('bucketing_key', 'text').execute();
        await db.schema.alterTable('audit_events').addColumn('import_id', uuid).execute();
      },
    },
    // The usage reports already counted, by the id their SDK gave them (docs/local-evaluation.md):
    // one sent again is answered as before and not counted twice. Kept while such a report could
    // still be taken (its ended_at at most 7 days ago).
    '0012_usage_reports': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('usage_reports')
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('report_id', uuid, (c) => c.notNull())
          .addColumn('accepted', 'integer', (c) => c.notNull())
          .addColumn('ended_at', timestamp, (c) => c.notNull())
          .addPrimaryKeyConstraint('usage_reports_pk', ['environment_id', 'report_id'])
          .execute();
        await db.schema.createIndex('usage_reports_ended_idx').on('usage_reports').column('ended_at').execute();
      },
    },
    // Scheduled changes and change requests (docs/change-management.md). A flag's
    // revision counts its changes (its rules' included): a change request records the revision of
    // each flag it touches, and is outdated when one moves. An event names the schedule or change
    // request it applied (and a request's approvers). A schedule keeps its flag's id without a
    // foreign key: deleting the flag cancels it, and the schedule stays to say so.
    '0013_change_management': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('environments').addColumn('approvals_required', 'integer', (c) => c.notNull().defaultTo(0)).execute();
        await db.schema.alterTable('flags').addColumn('revision', 'integer', (c) => c.notNull().defaultTo(0)).execute();
        await db.schema.alterTable('audit_events').addColumn('schedule_id', uuid).execute();
        await db.schema.alterTable('audit_events').addColumn('change_request_id', uuid).execute();
        await db.schema.alterTable('audit_events').addColumn('approvers', json).execute();

        await db.schema
          .createTable('change_requests')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('project_id', uuid, (c) => c.notNull().references('projects.id').onDelete('cascade'))
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('title', 'text', (c) => c.notNull())
          .addColumn('description', 'text')
          .addColumn('changes', json, (c) => c.notNull())
          .addColumn('apply_at', timestamp)
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('version', 'integer', (c) => c.notNull())
          .addColumn('author_user_id', uuid, (c) => c.notNull())
          .addColumn('author_email', 'text', (c) => c.notNull())
          .addColumn('author_token_id', uuid)
          .addColumn('diff', json, (c) => c.notNull())
          .addColumn('error', 'text')
          .addColumn('claimed_until', timestamp)
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addColumn('updated_at', timestamp, (c) => c.notNull())
          .addColumn('applied_at', timestamp)
          .execute();
        await db.schema.createIndex('change_requests_project_idx').on('change_requests').columns(['project_id', 'created_at']).execute();
        await db.schema.createIndex('change_requests_due_idx').on('change_requests').columns(['status', 'apply_at']).execute();
        await db.schema
          .createTable('change_request_reviews')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('change_request_id', uuid, (c) => c.notNull().references('change_requests.id').onDelete('cascade'))
          .addColumn('version', 'integer', (c) => c.notNull())
          .addColumn('user_id', uuid, (c) => c.notNull())
          .addColumn('email', 'text', (c) => c.notNull())
          .addColumn('token_id', uuid)
          .addColumn('decision', 'text', (c) => c.notNull())
          .addColumn('comment', 'text')
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('change_request_reviews_request_idx').on('change_request_reviews').columns(['change_request_id', 'created_at']).execute();
        await db.schema
          .createTable('change_request_flags')
          .addColumn('change_request_id', uuid, (c) => c.notNull().references('change_requests.id').onDelete('cascade'))
          .addColumn('flag_id', uuid, (c) => c.notNull())
          .addColumn('revision', 'integer', (c) => c.notNull())
          .addPrimaryKeyConstraint('change_request_flags_pk', ['change_request_id', 'flag_id'])
          .execute();
        await db.schema.createIndex('change_request_flags_flag_idx').on('change_request_flags').column('flag_id').execute();

        await db.schema
          .createTable('schedules')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('project_id', uuid, (c) => c.notNull().references('projects.id').onDelete('cascade'))
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('flag_id', uuid, (c) => c.notNull())
          .addColumn('flag_key', 'text', (c) => c.notNull())
          .addColumn('at', timestamp, (c) => c.notNull())
          .addColumn('change', json, (c) => c.notNull())
          .addColumn('note', 'text')
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('created_by_user_id', uuid, (c) => c.notNull())
          .addColumn('created_by_email', 'text', (c) => c.notNull())
          .addColumn('created_by_token_id', uuid)
          .addColumn('change_request_id', uuid)
          .addColumn('error', 'text')
          .addColumn('claimed_until', timestamp)
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addColumn('applied_at', timestamp)
          .execute();
        await db.schema.createIndex('schedules_due_idx').on('schedules').columns(['status', 'at']).execute();
        await db.schema.createIndex('schedules_flag_idx').on('schedules').columns(['flag_id', 'at']).execute();
        await db.schema.createIndex('schedules_project_idx').on('schedules').columns(['project_id', 'at']).execute();
      },
    },
    // Prerequisites (docs/prerequisites.md): the flags of the environment a flag needs,
    // a JSON array of {flag_key, enabled, variants?}; null: none. Named by key, so a parent may
    // be missing (never met) and is found again when created.
    '0014_prerequisites': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('flags').addColumn('prerequisites', json).execute();
        // History's snapshot names each flag's prerequisites, so that a row's reason names the
        // unmet one as evaluated then (its outcome code holds the position).
        await db.schema.alterTable('evaluation_snapshots').addColumn('flag_prerequisites', json).execute();
      },
    },
    // Experiments (docs/experiments.md): metrics are the project's, an experiment is a flag's in one
    // environment. An experiment keeps its flag's id and key without a foreign key: deleting the
    // flag stops it and it stays, with what it learned. Deleting the environment or the project
    // removes its experiments. experiment_metrics names each experiment's metrics in order; a
    // deleted metric leaves the experiments that used it (none running: that is refused).
    '0015_experiments': {
      async up(db: Kysely<any>) {
        const real = pg ? 'double precision' : 'real';
        await db.schema
          .createTable('metrics')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('project_id', uuid, (c) => c.notNull().references('projects.id').onDelete('cascade'))
          .addColumn('key', 'text', (c) => c.notNull())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('event', 'text', (c) => c.notNull())
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('better', 'text', (c) => c.notNull())
          .addColumn('window_hours', 'integer')
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addColumn('updated_at', timestamp, (c) => c.notNull())
          .addUniqueConstraint('metrics_project_key_unique', ['project_id', 'key'])
          .execute();
        await db.schema
          .createTable('experiments')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('project_id', uuid, (c) => c.notNull().references('projects.id').onDelete('cascade'))
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('flag_id', uuid, (c) => c.notNull())
          .addColumn('flag_key', 'text', (c) => c.notNull())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('hypothesis', 'text')
          .addColumn('control', 'text', (c) => c.notNull())
          .addColumn('alpha', real, (c) => c.notNull())
          .addColumn('sequential', bool, (c) => c.notNull())
          .addColumn('sequential_tuning', 'integer', (c) => c.notNull())
          .addColumn('cuped', bool, (c) => c.notNull())
          .addColumn('cuped_lookback_days', 'integer', (c) => c.notNull())
          .addColumn('min_units', 'integer', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('expected_shares', json)
          .addColumn('decision', 'text')
          .addColumn('note', 'text')
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addColumn('updated_at', timestamp, (c) => c.notNull())
          .addColumn('started_at', timestamp)
          .addColumn('stopped_at', timestamp)
          .execute();
        await db.schema.createIndex('experiments_environment_idx').on('experiments').columns(['environment_id', 'created_at']).execute();
        await db.schema.createIndex('experiments_flag_idx').on('experiments').columns(['flag_id', 'status']).execute();
        await db.schema
          .createTable('experiment_metrics')
          .addColumn('experiment_id', uuid, (c) => c.notNull().references('experiments.id').onDelete('cascade'))
          .addColumn('metric_id', uuid, (c) => c.notNull().references('metrics.id').onDelete('cascade'))
          .addColumn('role', 'text', (c) => c.notNull())
          .addColumn('position', 'integer', (c) => c.notNull())
          .addPrimaryKeyConstraint('experiment_metrics_pk', ['experiment_id', 'metric_id'])
          .execute();
        await db.schema.createIndex('experiment_metrics_metric_idx').on('experiment_metrics').column('metric_id').execute();
      },
    },
    // What applications send (docs/experiments.md, "Sending exposures and events"): an exposure is
    // a unit served an arm of a watched flag, an event something a unit did. Times are epoch
    // milliseconds (the results compare them by the million). `id` orders the rows, so that a
    // computation reads them in pages along the (environment, name) index without holding a
    // cursor open. A deleted environment (or project) takes its rows with it.
    // experiment_results holds each experiment's latest computation, answered as it is.
    '0016_exposures_events': {
      async up(db: Kysely<any>) {
        const real = pg ? 'double precision' : 'real';
        const id = pg ? 'bigint' : 'integer';
        const identity = (c: any) => (pg ? c.primaryKey().generatedAlwaysAsIdentity() : c.primaryKey());
        await db.schema
          .createTable('exposures')
          .addColumn('id', id, identity)
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('flag_key', 'text', (c) => c.notNull())
          .addColumn('unit', 'text', (c) => c.notNull())
          .addColumn('arm', 'text', (c) => c.notNull())
          .addColumn('at', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('exposures_flag_idx').on('exposures').columns(['environment_id', 'flag_key', 'id']).execute();
        await db.schema
          .createTable('events')
          .addColumn('id', id, identity)
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('unit', 'text', (c) => c.notNull())
          .addColumn('value', real, (c) => c.notNull())
          .addColumn('at', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('events_name_idx').on('events').columns(['environment_id', 'name', 'id']).execute();
        await db.schema
          .createTable('experiment_results')
          .addColumn('experiment_id', uuid, (c) => c.primaryKey().references('experiments.id').onDelete('cascade'))
          .addColumn('computed_at', timestamp, (c) => c.notNull())
          .addColumn('results', json, (c) => c.notNull())
          .execute();
      },
    },
    // Guarded releases (docs/releases.md): a rollout raised step by step by the releaser
    // (due-work/release-checks.ts), which leases a release due for a check (claimed_until, as the
    // scheduler leases schedules) and records each check with its figures in release_checks.
    // `flag_before` is what a rollback restores; `step_started` each reached step's start (epoch
    // ms), which says from when a unit of each bucket takes part. flag_id has no foreign key:
    // deleting the flag aborts the release, which stays with what it learned. audit_events gains
    // the release a change was made by.
    '0017_releases': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('releases')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('project_id', uuid, (c) => c.notNull().references('projects.id').onDelete('cascade'))
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('flag_id', uuid, (c) => c.notNull())
          .addColumn('flag_key', 'text', (c) => c.notNull())
          .addColumn('steps', json, (c) => c.notNull())
          .addColumn('hold_seconds', 'integer', (c) => c.notNull())
          .addColumn('check_seconds', 'integer', (c) => c.notNull())
          .addColumn('min_units', 'integer', (c) => c.notNull())
          .addColumn('guardrails', json, (c) => c.notNull())
          .addColumn('treatment', 'text', (c) => c.notNull())
          .addColumn('control', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('current_step', 'integer', (c) => c.notNull())
          .addColumn('step_started', json, (c) => c.notNull())
          .addColumn('flag_before', json, (c) => c.notNull())
          .addColumn('reason', 'text')
          .addColumn('created_by_user_id', uuid)
          .addColumn('created_by_email', 'text')
          .addColumn('change_request_id', uuid)
          .addColumn('created_at', timestamp, (c) => c.notNull())
          .addColumn('updated_at', timestamp, (c) => c.notNull())
          .addColumn('ended_at', timestamp)
          .addColumn('next_check_at', timestamp)
          .addColumn('claimed_until', timestamp)
          .execute();
        await db.schema.createIndex('releases_flag_idx').on('releases').columns(['flag_id', 'status']).execute();
        await db.schema.createIndex('releases_due_idx').on('releases').columns(['status', 'next_check_at']).execute();
        await db.schema
          .createTable('release_checks')
          .addColumn('id', uuid, (c) => c.primaryKey())
          .addColumn('release_id', uuid, (c) => c.notNull().references('releases.id').onDelete('cascade'))
          .addColumn('at', timestamp, (c) => c.notNull())
          .addColumn('figures', json, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('release_checks_release_idx').on('release_checks').columns(['release_id', 'at']).execute();
        await db.schema.alterTable('audit_events').addColumn('release_id', uuid).execute();
      },
    },
    // Units as integers (docs/experiments.md, "Beyond one database";
    // docs/adr/0027-experiments-at-scale.md): each environment's unit identifiers are kept once in `units`, filled by the
    // intake, and exposures and events name a unit by its id. A computation then reads four
    // numbers a row and finds a unit by an integer key (the time of a million units' results:
    // docs/performance.md, "Experiments"). Existing rows get their ids here.
    '0018_units': {
      async up(db: Kysely<any>) {
        const id = pg ? 'bigint' : 'integer';
        const identity = (c: any) => (pg ? c.primaryKey().generatedAlwaysAsIdentity() : c.primaryKey());
        await db.schema
          .createTable('units')
          .addColumn('id', id, identity)
          .addColumn('environment_id', uuid, (c) => c.notNull().references('environments.id').onDelete('cascade'))
          .addColumn('unit', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('units_unit_idx').on('units').columns(['environment_id', 'unit']).unique().execute();
        await sql`insert into units (environment_id, unit) select environment_id, unit from exposures union select environment_id, unit from events order by 1, 2`.execute(db);
        for (const table of ['exposures', 'events']) {
          // SQLite adds a NOT NULL column only with a default; every row gets its id just below.
          await db.schema.alterTable(table).addColumn('unit_id', id, (c) => c.notNull().defaultTo(0)).execute();
          await sql`update ${sql.table(table)} set unit_id = (select u.id from units u where u.environment_id = ${sql.ref(`${table}.environment_id`)} and u.unit = ${sql.ref(`${table}.unit`)})`.execute(db);
          if (pg) await db.schema.alterTable(table).alterColumn('unit_id', (c) => c.dropDefault()).execute();
          await db.schema.alterTable(table).dropColumn('unit').execute();
        }
        // The indexes a computation reads along now hold what it reads, so SQLite never visits the
        // table's rows (1.8 times as fast on ten million events): the same order, a wider entry.
        await db.schema.dropIndex('exposures_flag_idx').execute();
        await db.schema.createIndex('exposures_flag_idx').on('exposures').columns(['environment_id', 'flag_key', 'id', 'unit_id', 'arm', 'at']).execute();
        await db.schema.dropIndex('events_name_idx').execute();
        await db.schema.createIndex('events_name_idx').on('events').columns(['environment_id', 'name', 'id', 'unit_id', 'at', 'value']).execute();
      },
    },
    // PostgreSQL checks a foreign key row by row (a query and a row lock on the environment for
    // each row: half the time of writing exposures and events, and the intake fell behind 50,000
    // items a second; docs/performance.md, "Experiments"). Its writer instead locks the
    // environments of a group once (intake.writer.ts, PostgresRowWriter) and this trigger deletes an
    // environment's rows with it, as the cascade did. SQLite keeps its keys: dropping one
    // rebuilds the table, and its writer keeps up with them.
    '0019_intake_rows_unchecked': {
      async up(db: Kysely<any>) {
        if (!pg) return;
        await sql`
          do $$ declare fk record; begin
            for fk in select conrelid::regclass as child, conname from pg_constraint
                where contype = 'f' and confrelid = 'environments'::regclass and conrelid in ('exposures'::regclass, 'events'::regclass, 'units'::regclass) loop
              execute format('alter table %s drop constraint %I', fk.child, fk.conname);
            end loop;
          end $$`.execute(db);
        await sql`
          create function environment_intake_rows_deleted() returns trigger language plpgsql as $$ begin
            delete from exposures where environment_id = old.id;
            delete from events where environment_id = old.id;
            delete from units where environment_id = old.id;
            return null;
          end $$`.execute(db);
        await sql`create trigger environment_intake_rows_deleted after delete on environments for each row execute function environment_intake_rows_deleted()`.execute(db);
      },
    },
  };
}

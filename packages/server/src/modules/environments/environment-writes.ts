/**
 * The writes to a project's environments, each with its checks, as the routes and the import
 * (flags-as-code/import.ts) run them inside ProjectWrites.apply.
 */
import type { Static } from 'typebox';
import type { Db } from '../../db/database.js';
import { onlyProvided } from '../../db/values.js';
import type { Role } from '../../db/schema.js';
import { Forbidden, Invalid } from '../../errors.js';
import type { AuditAction } from '../changes/changes.schemas.js';
import type { RecordChange } from '../changes/project-writes.js';
import { createEnvironment, requireEnvironment, updateEnvironment, type EnvironmentScope } from './environments.repository.js';
import type { CreateEnvironmentBody, UpdateEnvironmentBody } from './environments.schemas.js';

type Environment = Awaited<ReturnType<typeof requireEnvironment>>;

/** The audit record of a change to it. */
export const environmentChange = (action: AuditAction, before: Environment | null, after: Environment | null) => {
  const environment = (after ?? before)!;
  return { action, resource_type: 'environment' as const, resource_id: environment.id, resource_key: environment.key, environment_id: environment.id, before, after };
};

export async function createEnvironmentWrite(trx: Db, record: RecordChange, projectId: string, body: Static<typeof CreateEnvironmentBody>): Promise<Environment> {
  const created = await createEnvironment(trx, projectId, body);
  record(environmentChange('environment.created', null, created));
  return created;
}

/** Only the fields sent change; the key never does, and approvals_required is an owner's (`role`: the writer's role in the project). */
export async function updateEnvironmentWrite(trx: Db, record: RecordChange, scope: EnvironmentScope, body: Static<typeof UpdateEnvironmentBody>, role: Role | null): Promise<Environment> {
  const { name, key, approvals_required } = body;
  const before = await requireEnvironment(trx, scope);
  if (key !== undefined && key !== before.key) throw new Invalid('The key of an environment cannot be changed');
  // Who may change what reaches an environment unreviewed is an owner's decision.
  if (approvals_required !== undefined && approvals_required !== before.approvals_required && role !== 'owner') {
    throw new Forbidden('Only an owner of the project may change approvals_required');
  }
  if (name === undefined && approvals_required === undefined) return before;
  const after = await updateEnvironment(trx, before.id, onlyProvided({ name, approvals_required }));
  record(environmentChange('environment.updated', before, after));
  return after;
}

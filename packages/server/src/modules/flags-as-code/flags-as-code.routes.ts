import { Type } from 'typebox';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import type { Db } from '../../db/database.js';
import { newId } from '../../db/values.js';
import { Invalid } from '../../errors.js';
import type { ApiPlugin } from '../../http/plugin.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import { holdsUnstorableText } from '../../http/well-formed.js';
import type { Actor } from '../changes/changes.schemas.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { listEnvironments } from '../environments/environments.repository.js';
import { CHANGE_REQUEST_LIMIT } from '../change-requests/change-requests.schemas.js';
import { createRequestWrite } from '../change-requests/change-requests.writes.js';
import { checkDocument, type DesiredState } from './document.check.js';
import { documentJsonSchema, DocumentProblems, ExportQuery, ImportPlan, ImportQuery, SCHEMA_PATH, UnleashImportAnswer } from './document.schemas.js';
import { applyImport, isEmpty, planImport, requestedChanges, type ImportMode, type Plan } from './import.js';
import { documentText, readProjectState, toDocument, type ProjectState } from './state.js';
import { fromUnleash } from './unleash.js';

/** An export of a big project passes 1 MiB: imports take up to 5 MiB (still checked in one pass). */
const IMPORT_BODY_LIMIT = 5 * 1024 * 1024;
const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];

/** The body as a value: JSON as Fastify parsed it, YAML parsed here (a 400 that says where). */
function documentOf(body: unknown): unknown {
  if (typeof body !== 'string') return body;
  let value: unknown;
  try {
    value = parseYaml(body, { version: '1.2', maxAliasCount: 100, uniqueKeys: true });
  } catch (error) {
    if (error instanceof YAMLParseError) throw new Invalid(`The YAML does not parse: ${error.message.split('\n')[0]}`);
    throw error;
  }
  if (holdsUnstorableText(value)) throw new Invalid('text must be well-formed Unicode without NUL characters');
  return value;
}

/** Where the import made a change request instead of writing (id null in a dry run: it would make one). */
export interface ImportRequest {
  environment: string;
  id: string | null;
}

/** The environments, among those the document names, that need approved change requests (approvals_required ≥ 1). */
const reviewedKeys = (state: ProjectState, desired: DesiredState) => state.environments.filter((env) => env.approvals_required > 0 && desired.managedEnvironments.has(env.key)).map((env) => env.key);

/** The environments whose flags the plan changes. */
const touched = (plan: Plan) => new Set([...plan.create, ...plan.update, ...plan.delete].filter((item) => item.resource === 'flag').map((item) => item.environment!));

/** `desired` with the flags of the given environments left as they are. */
function withoutFlagsOf(desired: DesiredState, current: ProjectState, keys: readonly string[]): DesiredState {
  const flags = new Map(desired.flags);
  for (const key of keys) flags.set(key, current.flags.get(key) ?? new Map());
  return { ...desired, flags };
}

/**
 * Checks the document against the project and, unless it is a dry run, applies it in one
 * transaction through the change path, every event carrying the import's id. An import that
 * changes nothing writes nothing (no revision, no event). The flags of an environment that needs
 * approvals are not written: that part of the plan becomes one change request of the environment
 * (docs/change-management.md), in the same transaction, listed in `change_requests`.
 */
async function runImport(db: Db, writes: ProjectWrites, actor: Actor, projectId: string, input: unknown, mode: ImportMode, dryRun: boolean): Promise<Plan & { mode: ImportMode; dry_run: boolean; import_id: string | null; change_requests: ImportRequest[] }> {
  const current = await readProjectState(db, projectId);
  const desired = checkDocument(input, current, mode);
  const plan = planImport(current, desired, mode);
  const wouldRequest = (state: ProjectState, planned: Plan) => reviewedKeys(state, desired).filter((key) => touched(planned).has(key));
  if (dryRun || isEmpty(plan)) return { mode, dry_run: dryRun, import_id: null, ...plan, change_requests: wouldRequest(current, plan).map((environment) => ({ environment, id: null })) };
  const importId = newId();
  // Checked and planned again inside the transaction: the project may have changed meanwhile.
  const applied = await writes.apply(
    actor,
    projectId,
    async (trx, record) => {
      const now = await readProjectState(trx, projectId);
      const desired = checkDocument(input, now, mode);
      const planned = planImport(now, desired, mode);
      const reviewed = wouldRequest(now, planned);
      await applyImport(trx, record, projectId, now, withoutFlagsOf(desired, now, reviewed), mode);
      const requests: ImportRequest[] = [];
      for (const key of reviewed) {
        const changes = await requestedChanges(trx, now, desired, mode, key);
        if (changes.length > CHANGE_REQUEST_LIMIT) throw new Invalid(`The import changes ${changes.length} things in ${key}, more than one change request holds (${CHANGE_REQUEST_LIMIT}): import it in parts`);
        const env = now.environments.find((environment) => environment.key === key)!;
        const request = await createRequestWrite(trx, record, { projectId, envId: env.id! }, { title: `Import into ${key}`, description: `The part of import ${importId} that changes ${key}, which needs approval.`, changes }, actor);
        requests.push({ environment: key, id: request.id });
      }
      return { ...planned, change_requests: requests };
    },
    { import_id: importId },
  );
  return { mode, dry_run: false, import_id: importId, ...applied };
}

/** /api/projects/{project_id}/export and …/import (docs/flags-as-code.md). */
export const flagsAsCodeRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['flags as code'];
  app.addSchema(ImportPlan);
  app.addSchema(UnleashImportAnswer);
  app.addSchema(DocumentProblems);
  app.addContentTypeParser(YAML_TYPES, { parseAs: 'string', bodyLimit: IMPORT_BODY_LIMIT }, (_request, body, done) => done(null, body));

  app.get('/projects/:project_id/export', {
    config: { role: 'viewer' },
    schema: {
      tags,
      description: `The project as one document (JSON or YAML; the same state gives the same bytes). Its JSON Schema: ${SCHEMA_PATH}`,
      params: ProjectParams,
      querystring: ExportQuery,
      response: { 200: Type.Unknown({ description: 'the document' }), ...errorResponses(400, 401, 404) },
    },
  }, async (request, reply) => {
    const format = request.query.format ?? 'json';
    const text = documentText(toDocument(await readProjectState(db, request.params.project_id)), format);
    return reply.type(format === 'json' ? 'application/json; charset=utf-8' : 'application/yaml; charset=utf-8').serializer((payload: string) => payload).send(text);
  });

  const problems = { 400: Type.Ref('DocumentProblems'), ...errorResponses(401, 403, 404, 409, 415) };
  app.post('/projects/:project_id/import', {
    config: { role: 'editor' },
    bodyLimit: IMPORT_BODY_LIMIT,
    schema: {
      tags,
      description: 'Body: a document as the export writes it, JSON or YAML (Content-Type: application/yaml). Checked whole first (400 lists every problem with its path); a dry run (the default) answers the plan.',
      params: ProjectParams,
      querystring: ImportQuery,
      body: Type.Unknown({ description: `a document (JSON Schema: ${SCHEMA_PATH}), as JSON or YAML` }),
      response: { 200: Type.Ref('ImportPlan'), ...problems },
    },
  }, async (request) => {
    const { mode = 'merge', dry_run = true } = request.query;
    return runImport(db, writes, request.actor, request.params.project_id, documentOf(request.body), mode, dry_run);
  });

  app.post('/projects/:project_id/import/unleash', {
    config: { role: 'editor' },
    bodyLimit: IMPORT_BODY_LIMIT,
    schema: {
      tags,
      description: "Body: an Unleash 5–8 export (features-batch/export), several as an array, or {exports, segments} with the answer of Unleash's GET /api/admin/segments. Mapped exactly or listed in skipped; a dry run (the default) answers the plan.",
      params: ProjectParams,
      querystring: Type.Object({ dry_run: ImportQuery.properties.dry_run }),
      body: Type.Unknown({ description: 'one Unleash export, an array of them, or {exports, segments}' }),
      response: { 200: Type.Ref('UnleashImportAnswer'), ...problems },
    },
  }, async (request) => {
    const { document, skipped } = fromUnleash(documentOf(request.body));
    // An environment the project has keeps its name: the import adds flags to it, it does not rename it.
    const names = new Map((await listEnvironments(db, request.params.project_id)).map((env) => [env.key, env.name]));
    document.environments = document.environments.map((env) => ({ ...env, name: names.get(env.key) ?? env.name }));
    const plan = await runImport(db, writes, request.actor, request.params.project_id, document, 'merge', request.query.dry_run ?? true);
    return { ...plan, skipped, document };
  });
};

/** GET /schemas/guidon-export-1.json: the document's JSON Schema, for editors and pipelines (no credential). */
export const documentSchemaRoutes: ApiPlugin = async (app) => {
  const text = JSON.stringify(documentJsonSchema, null, 2);
  app.get(SCHEMA_PATH, { schema: { tags: ['flags as code'], response: { 200: Type.Unknown({ description: 'JSON Schema (draft-07) of the export document' }) } } }, async (_request, reply) =>
    reply.type('application/schema+json; charset=utf-8').header('cache-control', 'public, max-age=3600').serializer((payload: string) => payload).send(text),
  );
};

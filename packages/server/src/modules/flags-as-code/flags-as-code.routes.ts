import { Type } from 'typebox';
import type { Db } from '../../db/database.js';
import { Invalid } from '../../errors.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { RateLimits } from '../../rate-limits.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import { holdsUnstorableText } from '../../http/well-formed.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { listEnvironments } from '../environments/environments.repository.js';
import { documentJsonSchema, DocumentProblems, ExportQuery, ImportPlan, ImportQuery, SCHEMA_PATH, UnleashImportAnswer } from './document.schemas.js';
import { runImport } from './import.js';
import { documentText, readProjectState, toDocument } from './state.js';
import { fromUnleash } from './unleash.js';
import { parseYamlBounded } from './yaml-parse.js';

/** An export of a big project passes 1 MiB: imports take up to 5 MiB (still checked in one pass). */
const IMPORT_BODY_LIMIT = 5 * 1024 * 1024;
const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];

/** The body as a value: JSON as Fastify parsed it, YAML parsed here, on a thread of its own (a 400 that says where). */
async function documentOf(body: unknown): Promise<unknown> {
  if (typeof body !== 'string') return body;
  const value = await parseYamlBounded(body);
  if (holdsUnstorableText(value)) throw new Invalid('text must be well-formed Unicode without NUL characters');
  return value;
}

/** /api/projects/{project_id}/export and …/import (docs/flags-as-code.md). */
export const flagsAsCodeRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites; limits: RateLimits }> = async (app, { db, writes, limits }) => {
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
      response: { 200: Type.Ref('ImportPlan'), ...problems, ...errorResponses(429) },
    },
  }, async (request) => {
    const { mode = 'merge', dry_run = true } = request.query;
    await limits.imports.hit(request.params.project_id);
    return runImport(db, writes, request.actor, request.params.project_id, await documentOf(request.body), mode, dry_run);
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
      response: { 200: Type.Ref('UnleashImportAnswer'), ...problems, ...errorResponses(429) },
    },
  }, async (request) => {
    await limits.imports.hit(request.params.project_id);
    const { document, skipped } = fromUnleash(await documentOf(request.body));
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

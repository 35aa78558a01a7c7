import { Type } from 'typebox';
import type { ApiPlugin } from '../../services.js';
import { Invalid } from '../../errors.js';
import { errorResponses } from '../../http/schemas.js';
import { requireProject } from '../projects/projects.repository.js';
import { ProjectParams } from '../projects/projects.schemas.js';
import { createEnvironment, deleteEnvironment, listEnvironments, renameEnvironment, requireEnvironment } from './environments.repository.js';
import { CreateEnvironmentBody, EnvironmentParams, UpdateEnvironmentBody } from './environments.schemas.js';

/** /api/projects/{project_id}/environments */
export const environmentRoutes: ApiPlugin = async (app, { db, history }) => {
  const tags = ['environments'];
  const EnvironmentRef = Type.Ref('Environment');
  const base = '/projects/:project_id/environments';
  const scopeOf = (request: { userId: string; params: { project_id: string; env_id: string } }) => ({
    ownerId: request.userId,
    projectId: request.params.project_id,
    envId: request.params.env_id,
  });

  app.post(base, {
    schema: { tags, params: ProjectParams, body: CreateEnvironmentBody, response: { 201: EnvironmentRef, ...errorResponses(400, 401, 404, 409) } },
  }, async (request, reply) => {
    const project = await requireProject(db, request.userId, request.params.project_id);
    return reply.code(201).send(await createEnvironment(db, project.id, request.body));
  });

  app.get(base, {
    schema: { tags, params: ProjectParams, response: { 200: Type.Array(EnvironmentRef), ...errorResponses(401, 404) } },
  }, async (request) => {
    const project = await requireProject(db, request.userId, request.params.project_id);
    return listEnvironments(db, project.id);
  });

  app.get(`${base}/:env_id`, {
    schema: { tags, params: EnvironmentParams, response: { 200: EnvironmentRef, ...errorResponses(401, 404) } },
  }, async (request) => requireEnvironment(db, scopeOf(request)));

  app.put(`${base}/:env_id`, {
    schema: { tags, params: EnvironmentParams, body: UpdateEnvironmentBody, response: { 200: EnvironmentRef, ...errorResponses(400, 401, 404) } },
  }, async (request) => {
    const environment = await requireEnvironment(db, scopeOf(request));
    const { name, key } = request.body;
    if (key !== undefined && key !== environment.key) throw new Invalid('The key of an environment cannot be changed');
    return name === undefined ? environment : renameEnvironment(db, environment.id, name);
  });

  app.delete(`${base}/:env_id`, {
    schema: { tags, params: EnvironmentParams, response: { 204: Type.Null(), ...errorResponses(401, 404) } },
  }, async (request, reply) => {
    const environment = await requireEnvironment(db, scopeOf(request));
    await history.deleteHistory([environment.id]); // in bounded steps, before the cascade would do it in one
    await deleteEnvironment(db, environment.id);
    return reply.code(204).send(null);
  });
};

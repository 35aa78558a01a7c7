import { Type } from 'typebox';
import type { ApiPlugin } from '../../services.js';
import { onlyProvided } from '../../db/values.js';
import { errorResponses } from '../../http/schemas.js';
import { listEnvironments } from '../environments/environments.repository.js';
import { createProject, deleteProject, listProjects, regenerateSdkKey, requireProject, updateProject } from './projects.repository.js';
import { CreateProjectBody, ProjectParams, UpdateProjectBody } from './projects.schemas.js';

/** /api/projects */
export const projectRoutes: ApiPlugin = async (app, { db, history }) => {
  const tags = ['projects'];
  const ProjectRef = Type.Ref('Project');

  app.post('/projects', {
    schema: { tags, body: CreateProjectBody, response: { 201: ProjectRef, ...errorResponses(400, 401) } },
  }, async (request, reply) => reply.code(201).send(await createProject(db, request.userId, request.body)));

  app.get('/projects', {
    schema: { tags, response: { 200: Type.Array(ProjectRef), ...errorResponses(401) } },
  }, async (request) => listProjects(db, request.userId));

  app.get('/projects/:project_id', {
    schema: { tags, params: ProjectParams, response: { 200: ProjectRef, ...errorResponses(401, 404) } },
  }, async (request) => requireProject(db, request.userId, request.params.project_id));

  app.put('/projects/:project_id', {
    schema: { tags, params: ProjectParams, body: UpdateProjectBody, response: { 200: ProjectRef, ...errorResponses(400, 401, 404) } },
  }, async (request) => {
    const { name, description } = request.body;
    return updateProject(db, request.userId, request.params.project_id, onlyProvided({ name, description }));
  });

  app.post('/projects/:project_id/regenerate-key', {
    schema: { tags, params: ProjectParams, response: { 200: ProjectRef, ...errorResponses(401, 404) } },
  }, async (request) => regenerateSdkKey(db, request.userId, request.params.project_id));

  app.delete('/projects/:project_id', {
    schema: { tags, params: ProjectParams, response: { 204: Type.Null(), ...errorResponses(401, 404) } },
  }, async (request, reply) => {
    // History first, in bounded steps (the cascade would delete it in one long statement).
    const project = await requireProject(db, request.userId, request.params.project_id);
    await history.deleteHistory((await listEnvironments(db, project.id)).map((env) => env.id));
    await deleteProject(db, request.userId, request.params.project_id);
    return reply.code(204).send(null);
  });
};

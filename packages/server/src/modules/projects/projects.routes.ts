import { Type } from 'typebox';
import type { AuditAction } from '../changes/changes.schemas.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import { newId, onlyProvided } from '../../db/values.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import { lowerOf } from '../members/access.js';
import { createProject, deleteProject, listProjects, regenerateSdkKey, requireProject, updateProject } from './projects.repository.js';
import { CreateProjectBody, UpdateProjectBody } from './projects.schemas.js';

/** /api/projects */
export const projectRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites; history: HistoryRecorder }> = async (app, { db, writes, history }) => {
  const tags = ['projects'];
  const ProjectRef = Type.Ref('Project');
  const record = (action: AuditAction, before: object | null, after: { id: string }) => ({ action, resource_type: 'project' as const, resource_id: after.id, before, after });

  app.post('/projects', {
    config: { role: 'user' },
    schema: { tags, body: CreateProjectBody, response: { 201: ProjectRef, ...errorResponses(400, 401, 403) } },
  }, async (request, reply) => {
    const owner = { id: request.userId, email: request.actor.email ?? '' };
    const id = newId();
    const project = await writes.apply(request.actor, id, async (trx, changed) => {
      const created = await createProject(trx, id, owner, request.body);
      changed(record('project.created', null, created));
      return created;
    });
    return reply.code(201).send({ ...project, role: 'owner' });
  });

  app.get('/projects', {
    config: { role: 'user' },
    schema: { tags, response: { 200: Type.Array(ProjectRef), ...errorResponses(401) } },
  }, async (request) => {
    const projects = await listProjects(db, request.userId, request.apiToken?.project_id ?? null);
    return projects.map((project) => ({ ...project, role: lowerOf(project.role, request.apiToken?.role ?? null) }));
  });

  app.get('/projects/:project_id', {
    config: { role: 'viewer' },
    schema: { tags, params: ProjectParams, response: { 200: ProjectRef, ...errorResponses(401, 404) } },
  }, async (request) => ({ ...(await requireProject(db, request.params.project_id)), role: request.projectRole }));

  app.put('/projects/:project_id', {
    config: { role: 'owner' },
    schema: { tags, params: ProjectParams, body: UpdateProjectBody, response: { 200: ProjectRef, ...errorResponses(400, 401, 403, 404) } },
  }, async (request) => {
    const { name, description } = request.body;
    const projectId = request.params.project_id;
    const project = await writes.apply(request.actor, projectId, async (trx, changed) => {
      const before = await requireProject(trx, projectId);
      const after = await updateProject(trx, projectId, onlyProvided({ name, description }));
      changed(record('project.updated', before, after));
      return after;
    });
    return { ...project, role: request.projectRole };
  });

  app.post('/projects/:project_id/regenerate-key', {
    config: { role: 'owner' },
    schema: { tags, params: ProjectParams, response: { 200: ProjectRef, ...errorResponses(401, 403, 404) } },
  }, async (request) => {
    const projectId = request.params.project_id;
    const project = await writes.apply(request.actor, projectId, async (trx, changed) => {
      const before = await requireProject(trx, projectId);
      const after = await regenerateSdkKey(trx, projectId);
      changed(record('project.key_regenerated', before, after));
      return after;
    });
    return { ...project, role: request.projectRole };
  });

  // No event: the project's audit log goes with it (docs/api.md, Audit log).
  app.delete('/projects/:project_id', {
    config: { role: 'owner' },
    schema: { tags, params: ProjectParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404) } },
  }, async (request, reply) => {
    await deleteProject({ db, writes, history }, request.actor, request.params.project_id);
    return reply.code(204).send(null);
  });
};

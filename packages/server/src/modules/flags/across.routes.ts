import { Type } from 'typebox';
import type { ApiPlugin } from '../../services.js';
import { errorResponses } from '../../http/schemas.js';
import { requireEnvironment } from '../environments/environments.repository.js';
import { requireProject } from '../projects/projects.repository.js';
import { ProjectParams } from '../projects/projects.schemas.js';
import { copyFlag, listProjectFlags } from './across.repository.js';
import { CopyFlagBody, ProjectFlag } from './across.schemas.js';
import { requireFlag } from './flags.repository.js';
import { flagScopeOf } from './flags.routes.js';
import { FlagParams } from './flags.schemas.js';

/** Flags across the environments of a project (contract §13): the side-by-side view and copying. */
export const acrossRoutes: ApiPlugin = async (app, { db }) => {
  const tags = ['flags'];
  app.addSchema(ProjectFlag);

  app.get('/projects/:project_id/flags', {
    config: { role: 'viewer' },
    schema: { tags, params: ProjectParams, response: { 200: Type.Array(Type.Ref('ProjectFlag')), ...errorResponses(401, 404) } },
  }, async (request) => listProjectFlags(db, (await requireProject(db, request.userId, request.params.project_id)).id));

  app.post('/projects/:project_id/environments/:env_id/flags/:flag_id/copy', {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, body: CopyFlagBody, response: { 200: Type.Ref('Flag'), 201: Type.Ref('Flag'), ...errorResponses(400, 401, 404, 409) } },
  }, async (request, reply) => {
    const source = await requireFlag(db, flagScopeOf(request));
    const target = await requireEnvironment(db, { ownerId: request.userId, projectId: request.params.project_id, envId: request.body.target_environment_id });
    const { flag, replaced } = await copyFlag(db, source, target, request.body.overwrite === true);
    return reply.code(replaced ? 200 : 201).send(flag);
  });
};

import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import { requireEnvironment } from '../environments/environments.repository.js';
import { requireProject } from '../projects/projects.repository.js';
import { checkFlagRules } from '../segments/segments.repository.js';
import { copyFlag, listProjectFlags } from './across.repository.js';
import { CopyFlagBody, ProjectFlag } from './across.schemas.js';
import { requireFlag } from './flags.repository.js';
import { flagChange } from './flag-writes.js';
import { flagScopeOf } from './flags.routes.js';
import { FlagParams } from './flags.schemas.js';

/** Flags across the environments of a project (docs/api.md, "Flags across environments"): the side-by-side view and copying. */
export const acrossRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['flags'];
  app.addSchema(ProjectFlag);

  app.get('/projects/:project_id/flags', {
    config: { role: 'viewer' },
    schema: { tags, params: ProjectParams, response: { 200: Type.Array(Type.Ref('ProjectFlag')), ...errorResponses(401, 404) } },
  }, async (request) => listProjectFlags(db, (await requireProject(db, request.params.project_id)).id));

  app.post('/projects/:project_id/environments/:env_id/flags/:flag_id/copy', {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, body: CopyFlagBody, response: { 200: Type.Ref('Flag'), 201: Type.Ref('Flag'), ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request, reply) => {
    const projectId = request.params.project_id;
    const { flag, replaced } = await writes.apply(request.actor, projectId, async (trx, record) => {
      const source = await requireFlag(trx, flagScopeOf(request));
      const target = await requireEnvironment(trx, { projectId, envId: request.body.target_environment_id });
      const copied = await copyFlag(trx, source, target, request.body.overwrite === true);
      // What the source was saved with may predate today's limits: the copy is held to them.
      await checkFlagRules(trx, projectId, [copied.flag]);
      record(flagChange(copied.replaced ? 'flag.updated' : 'flag.created', copied.replaced, copied.flag));
      return copied;
    });
    return reply.code(replaced ? 200 : 201).send(flag);
  });
};

import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import { errorResponses } from '../../http/schemas.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { requireFlag } from '../flags/flags.repository.js';
import { abortReleaseWrite, createReleaseWrite, pauseReleaseWrite, resumeReleaseWrite } from './release-writes.js';
import { listReleases, releaseWithChecks } from './releases.repository.js';
import { CreateReleaseBody, FlagReleaseParams, ReleaseParams } from './releases.schemas.js';

/** /api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/releases (docs/releases.md). */
export const releaseRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['releases'];
  const ReleaseRef = Type.Ref('Release');
  const base = '/projects/:project_id/environments/:env_id/flags/:flag_id/releases';
  const flagScopeOf = (params: { project_id: string; env_id: string; flag_id: string }) => ({ projectId: params.project_id, envId: params.env_id, flagId: params.flag_id });
  const scopeOf = (params: { project_id: string; env_id: string; flag_id: string; release_id: string }) => ({ ...flagScopeOf(params), releaseId: params.release_id });

  app.post(base, {
    config: { role: 'editor' },
    schema: {
      tags,
      description: 'Starts a guarded release: the flag on at the first step, checked every check_seconds. In an environment that needs approvals, a change request with op release.create.',
      params: FlagReleaseParams,
      body: CreateReleaseBody,
      response: { 201: ReleaseRef, ...errorResponses(400, 401, 403, 404, 409) },
    },
  }, async (request, reply) => {
    const scope = flagScopeOf(request.params);
    const release = await writes.apply(request.actor, scope.projectId, (trx, record) => createReleaseWrite(trx, record, scope, request.body, request.actor, null));
    return reply.code(201).send(release);
  });

  app.get(base, {
    config: { role: 'viewer' },
    schema: { tags, description: "The flag's releases in this environment, newest first (without their checks).", params: FlagReleaseParams, response: { 200: Type.Array(ReleaseRef), ...errorResponses(401, 404) } },
  }, async (request) => {
    await requireFlag(db, flagScopeOf(request.params));
    return listReleases(db, flagScopeOf(request.params));
  });

  app.get(`${base}/:release_id`, {
    config: { role: 'viewer' },
    schema: { tags, description: 'The release with every check and its figures, oldest first.', params: ReleaseParams, response: { 200: ReleaseRef, ...errorResponses(401, 404) } },
  }, async (request) => releaseWithChecks(db, scopeOf(request.params)));

  app.post(`${base}/:release_id/pause`, {
    config: { role: 'editor' },
    schema: { tags, description: 'Running → paused: it no longer advances; its checks go on, and a harmful guardrail still rolls it back.', params: ReleaseParams, response: { 200: ReleaseRef, ...errorResponses(401, 403, 404, 409) } },
  }, async (request) => writes.apply(request.actor, request.params.project_id, (trx, record) => pauseReleaseWrite(trx, record, scopeOf(request.params), request.actor)));

  app.post(`${base}/:release_id/resume`, {
    config: { role: 'editor' },
    schema: { tags, description: 'Paused → running.', params: ReleaseParams, response: { 200: ReleaseRef, ...errorResponses(401, 403, 404, 409) } },
  }, async (request) => writes.apply(request.actor, request.params.project_id, (trx, record) => resumeReleaseWrite(trx, record, scopeOf(request.params))));

  app.post(`${base}/:release_id/abort`, {
    config: { role: 'editor' },
    schema: { tags, description: 'Ends the release and rolls the flag back to what it was before it (no approval needed: the release was approved).', params: ReleaseParams, response: { 200: ReleaseRef, ...errorResponses(401, 403, 404, 409) } },
  }, async (request) =>
    writes.apply(request.actor, request.params.project_id, (trx, record) => abortReleaseWrite(trx, record, scopeOf(request.params), request.actor), { release_id: request.params.release_id }),
  );
};

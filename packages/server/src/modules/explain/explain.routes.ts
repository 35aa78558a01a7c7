import type { Db } from '../../db/database.js';
import type { ApiPlugin } from '../../http/plugin.js';
import { errorResponses, EnvironmentParams } from '../../http/schemas.js';
import { requireEnvironment } from '../environments/environments.repository.js';
import { contextOf } from '../evaluate/evaluation.js';
import { explainFlags } from './explain.js';
import { loadEnvironmentForExplain } from './explain.repository.js';
import { ExplainBody, ExplainResult } from './explain.schemas.js';

/**
 * POST /api/projects/{pid}/environments/{eid}/explain: what each flag gives a context and which
 * rule served it, for the dashboard's Try it. It reads, never records: no history, no counts.
 */
export const explainRoutes: ApiPlugin<{ db: Db }> = async (app, { db }) => {
  app.post('/projects/:project_id/environments/:env_id/explain', {
    // Any member may ask: it changes nothing and shows only what the rules page shows.
    config: { role: 'viewer' },
    schema: { tags: ['evaluate'], params: EnvironmentParams, body: ExplainBody, response: { 200: ExplainResult, ...errorResponses(400, 401, 404) } },
  }, async (request) => {
    const { project_id: projectId, env_id: envId } = request.params;
    const environment = await requireEnvironment(db, { projectId, envId });
    const { flags, segments } = await loadEnvironmentForExplain(db, projectId, environment.id);
    const sent = request.body.context;
    const context = contextOf(sent?.user_id, sent?.user_email, sent?.custom_attributes);
    return { flags: explainFlags(flags, context, { environment: environment.key, segments }) };
  });
};

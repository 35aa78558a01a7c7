import { Type } from 'typebox';
import type { Db } from '../../db/database.js';
import { toIso } from '../../db/values.js';
import type { ApiPlugin } from '../../http/plugin.js';
import { errorResponses, EnvironmentParams, Timestamp } from '../../http/schemas.js';
import { requireEnvironment } from '../environments/environments.repository.js';
import { ATTRIBUTE_NAMES_LIMIT, oldestOffered } from './attributes.seen.js';

const AttributeList = Type.Object({
  items: Type.Array(
    Type.Object({
      name: Type.String({ description: 'a custom attribute name that evaluate or OFREP requests carried (values are never kept)' }),
      first_seen_at: Timestamp,
      last_seen_at: Timestamp,
    }),
    { description: 'most recently seen first; the 200 most recently seen, none unseen for 30 days; the built-in attributes of docs/targeting.md are not listed' },
  ),
});

/** GET /api/projects/{pid}/environments/{eid}/attributes: what the rule editor offers first. */
export const attributeRoutes: ApiPlugin<{ db: Db }> = async (app, { db }) => {
  app.get('/projects/:project_id/environments/:env_id/attributes', {
    config: { role: 'viewer' },
    schema: { tags: ['environments'], params: EnvironmentParams, response: { 200: AttributeList, ...errorResponses(401, 404) } },
  }, async (request) => {
    const environment = await requireEnvironment(db, { projectId: request.params.project_id, envId: request.params.env_id });
    const rows = await db
      .selectFrom('environment_attributes')
      .select(['name', 'first_seen_at', 'last_seen_at'])
      .where('environment_id', '=', environment.id)
      // The writer deletes what is older or past the limit when it next stores names for this environment.
      .where('last_seen_at', '>=', oldestOffered())
      .orderBy('last_seen_at', 'desc')
      .orderBy('name')
      .limit(ATTRIBUTE_NAMES_LIMIT)
      .execute();
    return { items: rows.map((row) => ({ name: row.name, first_seen_at: toIso(row.first_seen_at), last_seen_at: toIso(row.last_seen_at) })) };
  });
};

import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import { listAuditEvents } from './audit.repository.js';
import { AuditPage, AuditQuery } from './audit.schemas.js';

/** GET /api/projects/{project_id}/audit (docs/api.md, "Audit log"), newest first. */
export const auditRoutes: ApiPlugin<{ db: Db }> = async (app, { db }) => {
  app.get('/projects/:project_id/audit', {
    config: { role: 'viewer' },
    schema: { tags: ['audit'], params: ProjectParams, querystring: AuditQuery, response: { 200: AuditPage, ...errorResponses(400, 401, 404) } },
  }, async (request) => listAuditEvents(db, request.params.project_id, { ...request.query, limit: request.query.limit ?? 50 }));
};

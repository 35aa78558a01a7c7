/** A project's team for the change-management tests: members, their API tokens, and the audit log read whole. */
import assert from 'node:assert/strict';
import { request, type TestServer, type TestUser } from './harness.js';

/**
 * Makes the user a member with that role: added by the owner, and when that made an invitation
 * (docs/api.md, Members), accepted by the user.
 */
export async function addMember(server: TestServer, owner: TestUser, projectId: string, user: TestUser, role: 'viewer' | 'editor' | 'owner'): Promise<void> {
  const added = await request(server, 'POST', `/api/projects/${projectId}/members`, { token: owner.token, body: { email: user.email, role } });
  assert.equal(added.status, 201, added.text);
  if (added.body.status !== 'invited') return;
  const invitations = await request(server, 'GET', '/api/invitations', { token: user.token });
  const invitation = invitations.body.find((item: { project: { id: string } }) => item.project.id === projectId);
  assert.ok(invitation, `an invitation to ${user.email}: ${invitations.text}`);
  const accepted = await request(server, 'POST', `/api/invitations/${invitation.id}/accept`, { token: user.token });
  assert.ok(accepted.status < 300, accepted.text);
}

/** An API token of the user (every project, the user's roles). */
export async function apiToken(server: TestServer, user: TestUser, name = 'ci'): Promise<string> {
  const created = await request(server, 'POST', '/api/tokens', { token: user.token, body: { name } });
  assert.equal(created.status, 201, created.text);
  return created.body.token as string;
}

/** Every audit event of the project, newest first. */
export async function auditEvents(server: TestServer, token: string, projectId: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const page: any = await request(server, 'GET', `/api/projects/${projectId}/audit?limit=500${cursor ? `&cursor=${cursor}` : ''}`, { token });
    assert.equal(page.status, 200, page.text);
    items.push(...page.body.items);
    cursor = page.body.next_cursor;
  } while (cursor);
  return items;
}

import { useMutation, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { api, unwrap, type Member } from './client';
import { keys, projectParams, teamKeys } from './queries';
import type { Role } from './roles';

const memberPath = (project_id: string, member_id: string) => ({ params: { path: { project_id, member_id } } });
const isMe = (client: QueryClient, member: Member) => member.user_id !== null && member.user_id === client.getQueryData<{ user_id: string }>(teamKeys.me)?.user_id;

/** A new role; when it is one's own, the project (which carries the caller's role) is read again. Members are read again either way. */
export function useChangeRole(pid: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ member, role }: { member: Member; role: Role }) => unwrap(api.PUT('/api/projects/{project_id}/members/{member_id}', { ...memberPath(pid, member.id), body: { role } })),
    onSuccess: (_data, { member }) => (isMe(client, member) ? client.invalidateQueries({ queryKey: keys.project(pid) }) : undefined),
    onSettled: () => client.invalidateQueries({ queryKey: teamKeys.members(pid) }),
  });
}

/**
 * Removes a member or cancels an invitation. Removing oneself is leaving: `leave` takes the person
 * off the project's pages, then the project drops out of the cache and of one's list. In that order
 * and at once (navigate's flushSync): dropped while a page still shows it, it is fetched again, and
 * answers 404.
 */
export function useRemoveMember(pid: string, leave: () => void) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (member: Member) => unwrap(api.DELETE('/api/projects/{project_id}/members/{member_id}', memberPath(pid, member.id))),
    onSuccess: (_data, member) => {
      if (!isMe(client, member)) return client.invalidateQueries({ queryKey: teamKeys.members(pid) });
      leave();
      client.removeQueries({ queryKey: keys.project(pid) });
      return client.invalidateQueries({ queryKey: keys.projects });
    },
  });
}

/** Sends an invitation by email: the person becomes a member once they accept it. */
export function useInvite(pid: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { email: string; role: Role }) => unwrap(api.POST('/api/projects/{project_id}/members', { ...projectParams(pid), body })),
    onSuccess: () => client.invalidateQueries({ queryKey: teamKeys.members(pid) }),
  });
}

/**
 * The signed-in person answers an invitation to them: accepting adds the project to their list,
 * declining removes the invitation. Either way the list of invitations is read again.
 */
export function useAnswerInvitation() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ id, accept }: { id: string; accept: boolean }) => {
      const params = { params: { path: { invitation_id: id } } };
      return unwrap(accept ? api.POST('/api/invitations/{invitation_id}/accept', params) : api.POST('/api/invitations/{invitation_id}/decline', params));
    },
    onSuccess: (_data, { accept }) => (accept ? client.invalidateQueries({ queryKey: keys.projects }) : undefined),
    onSettled: () => client.invalidateQueries({ queryKey: teamKeys.invitations }),
  });
}

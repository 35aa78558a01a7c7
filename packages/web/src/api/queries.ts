import { useQueries, useQuery } from '@tanstack/react-query';
import { api, unwrap, type ChangeRequestStatus } from './client';

const p = (project_id: string) => ({ params: { path: { project_id } } });
const e = (project_id: string, env_id: string) => ({ params: { path: { project_id, env_id } } });
const f = (project_id: string, env_id: string, flag_id: string) => ({ params: { path: { project_id, env_id, flag_id } } });

export const keys = {
  projects: ['projects'] as const,
  project: (pid: string) => ['project', pid] as const,
  environments: (pid: string) => ['environments', pid] as const,
  projectFlags: (pid: string) => ['projectFlags', pid] as const,
  flag: (flagId: string) => ['flag', flagId] as const,
  rules: (flagId: string) => ['rules', flagId] as const,
  segments: (pid: string) => ['segments', pid] as const,
  attributes: (envId: string) => ['attributes', envId] as const,
  schedules: (flagId: string) => ['schedules', flagId] as const,
  changeRequests: (pid: string) => ['changeRequests', pid] as const,
  changeRequest: (crId: string) => ['changeRequest', crId] as const,
};

export const useProjects = () => useQuery({ queryKey: keys.projects, queryFn: () => unwrap(api.GET('/api/projects')) });
export const useProject = (pid: string) => useQuery({ queryKey: keys.project(pid), queryFn: () => unwrap(api.GET('/api/projects/{project_id}', p(pid))) });
export const useEnvironments = (pid: string) =>
  useQuery({ queryKey: keys.environments(pid), queryFn: () => unwrap(api.GET('/api/projects/{project_id}/environments', p(pid))) });
export const useProjectFlags = (pid: string) =>
  useQuery({ queryKey: keys.projectFlags(pid), queryFn: () => unwrap(api.GET('/api/projects/{project_id}/flags', p(pid))) });
export const useFlag = (pid: string, envId: string, flagId: string) =>
  useQuery({ queryKey: keys.flag(flagId), queryFn: () => unwrap(api.GET('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}', f(pid, envId, flagId))) });
export const useRules = (pid: string, envId: string, flagId: string) =>
  useQuery({ queryKey: keys.rules(flagId), queryFn: () => unwrap(api.GET('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/rules', f(pid, envId, flagId))) });

/** A flag's scheduled changes, by time (pending and past). */
export const useSchedules = (pid: string, envId: string, flagId: string) =>
  useQuery({ queryKey: keys.schedules(flagId), queryFn: () => unwrap(api.GET('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/schedules', f(pid, envId, flagId))) });

/** The project's change requests, newest first; `status` narrows them. */
export const useChangeRequests = (pid: string, status?: ChangeRequestStatus) =>
  useQuery({
    queryKey: [...keys.changeRequests(pid), status ?? 'all'],
    queryFn: () => unwrap(api.GET('/api/projects/{project_id}/change-requests', { params: { path: { project_id: pid }, query: { limit: 200, ...(status ? { status } : {}) } } })),
  });
export const useChangeRequest = (pid: string, crId: string) =>
  useQuery({ queryKey: keys.changeRequest(crId), queryFn: () => unwrap(api.GET('/api/projects/{project_id}/change-requests/{cr_id}', { params: { path: { project_id: pid, cr_id: crId } } })) });
/** The client packages this server serves as npm tarballs (GET /downloads/): they never change while it runs. */
export const useDownloads = () => useQuery({ queryKey: ['downloads'], queryFn: () => unwrap(api.GET('/downloads/')), staleTime: Infinity });

export const useSegments = (pid: string) =>
  useQuery({ queryKey: keys.segments(pid), queryFn: () => unwrap(api.GET('/api/projects/{project_id}/segments', p(pid))) });

/** The custom attribute names the environment's evaluate requests carried, most recent first. */
export const useSeenAttributes = (pid: string, envId: string) =>
  useQuery({ queryKey: keys.attributes(envId), queryFn: () => unwrap(api.GET('/api/projects/{project_id}/environments/{env_id}/attributes', e(pid, envId))) });

/** The names seen in any of the environments (a segment applies in all of them), most recently seen first. */
export function useProjectSeenAttributes(pid: string, envIds: readonly string[]): string[] {
  const lists = useQueries({
    queries: envIds.map((envId) => ({ queryKey: keys.attributes(envId), queryFn: () => unwrap(api.GET('/api/projects/{project_id}/environments/{env_id}/attributes', e(pid, envId))) })),
  });
  const items = lists.flatMap((list) => list.data?.items ?? []).sort((a, b) => b.last_seen_at.localeCompare(a.last_seen_at));
  return [...new Set(items.map((item) => item.name))];
}

export { e as envParams, f as flagParams, p as projectParams };

export const teamKeys = {
  members: (pid: string) => ['members', pid] as const,
  tokens: ['tokens'] as const,
  audit: (pid: string, filters: object) => ['audit', pid, filters] as const,
  webhooks: (pid: string) => ['webhooks', pid] as const,
  deliveries: (pid: string, webhookId: string) => ['deliveries', pid, webhookId] as const,
  me: ['me'] as const,
  invitations: ['invitations'] as const,
};

/** How one may sign in here (password, the OpenID provider): the same for everyone, so fetched once. */
export const useSignInOptions = () => useQuery({ queryKey: ['signInOptions'], queryFn: () => unwrap(api.GET('/auth/methods')), staleTime: Infinity });
export const useSignInMethods = () => useQuery({ queryKey: ['signInMethods'], queryFn: () => unwrap(api.GET('/api/me/sign-in-methods')) });
/** The caller's pending invitations (none while the address is unverified). */
export const useInvitations = () => useQuery({ queryKey: teamKeys.invitations, queryFn: () => unwrap(api.GET('/api/invitations')) });
export const useMe = () => useQuery({ queryKey: teamKeys.me, queryFn: () => unwrap(api.GET('/api/me')), staleTime: Infinity });
export const useMembers = (pid: string) =>
  useQuery({ queryKey: teamKeys.members(pid), queryFn: () => unwrap(api.GET('/api/projects/{project_id}/members', p(pid))) });
export const useTokens = (enabled = true) => useQuery({ queryKey: teamKeys.tokens, queryFn: () => unwrap(api.GET('/api/tokens')), enabled });
export const useWebhooks = (pid: string, enabled = true) =>
  useQuery({ queryKey: teamKeys.webhooks(pid), queryFn: () => unwrap(api.GET('/api/projects/{project_id}/webhooks', p(pid))), enabled });

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from './client';
import { writeOrDraft } from './drafts';
import { flagParams, keys } from './queries';
import type { components, paths } from './schema';

/** A guarded release (docs/releases.md): a rollout raised step by step that watches guardrail metrics and rolls back by itself. */
export type Release = components['schemas']['Release'];
export type ReleaseCheck = NonNullable<Release['checks']>[number];
export type GuardrailFigures = ReleaseCheck['guardrails'][number];
export type ReleaseStatus = Release['status'];
export type ReleaseBody = paths['/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/releases']['post']['requestBody']['content']['application/json'];

export type ReleaseAction = 'pause' | 'resume' | 'abort';

export const releaseKeys = {
  list: (flagId: string) => ['releases', flagId] as const,
  one: (releaseId: string) => ['release', releaseId] as const,
};

/** Running and paused releases still move; the others have ended. */
export const isLive = (release: Pick<Release, 'status'>) => release.status === 'running' || release.status === 'paused';

const releasePath = (pid: string, envId: string, flagId: string, release_id: string) => ({ params: { path: { ...flagParams(pid, envId, flagId).params.path, release_id } } });

/**
 * A live release is read again at about half its check interval (at most every 10 s), so a step,
 * a pause or a rollback shows without a reload; an ended one is not.
 */
const pollEvery = (release: Release | undefined) => (release && isLive(release) ? Math.min(10_000, release.check_seconds * 500) : false);

/** The flag's releases in its environment, newest first (without their checks). */
export const useReleases = (pid: string, envId: string, flagId: string) =>
  useQuery({
    queryKey: releaseKeys.list(flagId),
    queryFn: () => unwrap(api.GET('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/releases', flagParams(pid, envId, flagId))),
    refetchInterval: (query) => pollEvery(query.state.data?.[0]),
  });

/** One release with every check, oldest first. */
export const useRelease = (pid: string, envId: string, flagId: string, releaseId: string | undefined) =>
  useQuery({
    queryKey: releaseKeys.one(releaseId ?? ''),
    enabled: releaseId !== undefined,
    queryFn: () => unwrap(api.GET('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/releases/{release_id}', releasePath(pid, envId, flagId, releaseId ?? ''))),
    refetchInterval: (query) => pollEvery(query.state.data),
  });

/**
 * Start, pause, resume and abort. Each reads the releases and the flag again (a release moves the
 * flag's rollout, and an abort or a rollback puts the flag back). In an environment that needs
 * approval a start goes into the draft change request (op release.create), like every flag edit.
 */
export function useReleaseMutations(pid: string, envId: string, flagId: string) {
  const client = useQueryClient();
  const refresh = () => refreshAfterRelease(client, flagId, pid);
  const start = useMutation({
    mutationFn: (body: ReleaseBody) =>
      writeOrDraft(client, pid, envId, { op: 'release.create', flag_id: flagId, release: body }, () =>
        unwrap(api.POST('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/releases', { ...flagParams(pid, envId, flagId), body })),
      ),
    onSettled: refresh,
  });
  /** Pause, resume or abort one release: the server answers the release as it is now. */
  const act = useMutation({
    mutationFn: ({ action, releaseId }: { action: ReleaseAction; releaseId: string }) => {
      const params = releasePath(pid, envId, flagId, releaseId);
      if (action === 'pause') return unwrap(api.POST('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/releases/{release_id}/pause', params));
      if (action === 'resume') return unwrap(api.POST('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/releases/{release_id}/resume', params));
      return unwrap(api.POST('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/releases/{release_id}/abort', params));
    },
    onSettled: refresh,
  });
  return { start, act };
}

/** The release list and each release, the flag and the project's overview read again. */
export function refreshAfterRelease(client: ReturnType<typeof useQueryClient>, flagId: string, pid: string) {
  return Promise.all([
    client.invalidateQueries({ queryKey: releaseKeys.list(flagId) }),
    client.invalidateQueries({ queryKey: ['release'] }),
    client.invalidateQueries({ queryKey: keys.flag(flagId) }),
    client.invalidateQueries({ queryKey: keys.projectFlags(pid) }),
  ]);
}

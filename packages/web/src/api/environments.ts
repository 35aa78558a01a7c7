import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from './client';
import { envParams, keys, projectParams } from './queries';

/** An environment's change shows in its list and in the flags overview, whose columns are environments. */
function useEnvironmentMutation<V, T>(pid: string, mutationFn: (variables: V) => Promise<T>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn,
    onSuccess: () => Promise.all([client.invalidateQueries({ queryKey: keys.environments(pid) }), client.invalidateQueries({ queryKey: keys.projectFlags(pid) })]),
  });
}

export const useCreateEnvironment = (pid: string) =>
  useEnvironmentMutation(pid, (body: { name: string; key: string }) => unwrap(api.POST('/api/projects/{project_id}/environments', { ...projectParams(pid), body })));

export const useRenameEnvironment = (pid: string) =>
  useEnvironmentMutation(pid, ({ envId, name }: { envId: string; name: string }) =>
    unwrap(api.PUT('/api/projects/{project_id}/environments/{env_id}', { ...envParams(pid, envId), body: { name } })),
  );

export const useDeleteEnvironment = (pid: string) =>
  useEnvironmentMutation(pid, (envId: string) => unwrap(api.DELETE('/api/projects/{project_id}/environments/{env_id}', envParams(pid, envId))));

/** How many approvals a change request needs before changes reach the environment (owners; 0: changes apply directly). */
export const useSetApprovals = (pid: string) =>
  useEnvironmentMutation(pid, ({ envId, approvals_required }: { envId: string; approvals_required: number }) =>
    unwrap(api.PUT('/api/projects/{project_id}/environments/{env_id}', { ...envParams(pid, envId), body: { approvals_required } })),
  );

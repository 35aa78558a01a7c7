import { useMutation, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { api, unwrap, type Project } from './client';
import { keys, projectParams } from './queries';

type ProjectBody = { name: string; description: string | null };

/** The answer of a rename or a key rotation is the project: shown at once, the list refreshed behind. */
const showProject = (client: QueryClient) => (updated: Project) => {
  client.setQueryData(keys.project(updated.id), updated);
  void client.invalidateQueries({ queryKey: keys.projects });
};

export function useCreateProject() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: ProjectBody) => unwrap(api.POST('/api/projects', { body })),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.projects }),
  });
}

export function useUpdateProject(pid: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: ProjectBody) => unwrap(api.PUT('/api/projects/{project_id}', { ...projectParams(pid), body })),
    onSuccess: showProject(client),
  });
}

/** A new SDK key; the old one stops working at once. */
export function useRotateSdkKey(pid: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.POST('/api/projects/{project_id}/regenerate-key', projectParams(pid))),
    onSuccess: showProject(client),
  });
}

/** Deletes the project; `leave` takes the person off its pages before its data goes (see useRemoveMember). */
export function useDeleteProject(pid: string, leave: () => void) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.DELETE('/api/projects/{project_id}', projectParams(pid))),
    onSuccess: () => {
      leave();
      client.removeQueries({ queryKey: keys.project(pid) });
      return client.invalidateQueries({ queryKey: keys.projects });
    },
  });
}

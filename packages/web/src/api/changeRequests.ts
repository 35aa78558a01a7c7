import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, unwrap, type ChangeRequest } from './client';
import { drafts, type DraftItem } from './drafts';
import { keys } from './queries';

/**
 * Change requests (docs/change-management.md). Every write answers the request as it now is,
 * which is shown at once; the lists, and what an applied request changed, are fetched again.
 */
export function useChangeRequestMutations(pid: string) {
  const client = useQueryClient();
  const path = (crId: string) => ({ params: { path: { project_id: pid, cr_id: crId } } });
  const settled = (request: ChangeRequest) => {
    client.setQueryData(keys.changeRequest(request.id), request);
    void client.invalidateQueries({ queryKey: keys.changeRequests(pid) });
    if (request.status === 'applied') {
      for (const queryKey of [keys.projectFlags(pid), ['flag'], ['rules'], ['schedules']]) void client.invalidateQueries({ queryKey });
    }
  };

  /** Sends an environment's draft as one request; the draft is emptied once the server has it. */
  const submit = useMutation({
    mutationFn: ({ envId, title, description, items }: { envId: string; title: string; description: string | null; items: DraftItem[] }) =>
      unwrap(api.POST('/api/projects/{project_id}/environments/{env_id}/change-requests', { params: { path: { project_id: pid, env_id: envId } }, body: { title, description, changes: items.map((item) => item.change) } })),
    onSuccess: (request, { envId }) => {
      drafts.clear(pid, envId);
      settled(request);
    },
  });
  const review = useMutation({
    mutationFn: ({ crId, decision, comment }: { crId: string; decision: 'approve' | 'reject'; comment: string | null }) =>
      unwrap(api.POST('/api/projects/{project_id}/change-requests/{cr_id}/reviews', { ...path(crId), body: { decision, comment } })),
    onSuccess: settled,
  });
  const apply = useMutation({ mutationFn: (crId: string) => unwrap(api.POST('/api/projects/{project_id}/change-requests/{cr_id}/apply', path(crId))), onSuccess: settled });
  const cancel = useMutation({ mutationFn: (crId: string) => unwrap(api.POST('/api/projects/{project_id}/change-requests/{cr_id}/cancel', path(crId))), onSuccess: settled });
  // A refused apply may have failed or outdated the request: read it again.
  const refresh = (crId: string) => client.invalidateQueries({ queryKey: keys.changeRequest(crId) });
  return { submit, review, apply, cancel, refresh };
}

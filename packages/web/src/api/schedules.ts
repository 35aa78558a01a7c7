import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, unwrap, type FlagChange } from './client';
import { writeOrDraft } from './drafts';
import { flagParams, keys } from './queries';

/**
 * A flag's scheduled changes (docs/change-management.md): each at a time, a PUT of the flag. In an
 * environment that needs approval they go into the draft change request instead, like every edit.
 */
export function useScheduleMutations(pid: string, envId: string, flagId: string) {
  const client = useQueryClient();
  const onSettled = () => client.invalidateQueries({ queryKey: keys.schedules(flagId) });
  /** One or several (a ramp): created one after the other, in order. */
  const create = useMutation({
    mutationFn: async (series: { at: string; change: FlagChange; note?: string | null }[]) => {
      for (const item of series) {
        await writeOrDraft(client, pid, envId, { op: 'schedule.create', flag_id: flagId, ...item }, () =>
          unwrap(api.POST('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/schedules', { ...flagParams(pid, envId, flagId), body: item })),
        );
      }
    },
    onSettled,
  });
  const cancel = useMutation({
    mutationFn: (scheduleId: string) =>
      writeOrDraft(client, pid, envId, { op: 'schedule.cancel', schedule_id: scheduleId }, () =>
        unwrap(api.DELETE('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/schedules/{schedule_id}', { params: { path: { ...flagParams(pid, envId, flagId).params.path, schedule_id: scheduleId } } })),
      ),
    onSettled,
  });
  return { create, cancel };
}

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, unwrap, type Segment } from './client';
import { keys, projectParams } from './queries';

export type SegmentBody = Pick<Segment, 'key' | 'name' | 'description' | 'conditions'>;

const segmentPath = (project_id: string, segment_id: string) => ({ params: { path: { project_id, segment_id } } });

/** The segment writes of a project; each reads the list again, refused or not. A refusal (400, 409 in use) carries the server's message. */
export function useSegmentMutations(pid: string) {
  const client = useQueryClient();
  const onSettled = () => client.invalidateQueries({ queryKey: keys.segments(pid) });
  const create = useMutation({ mutationFn: (body: SegmentBody) => unwrap(api.POST('/api/projects/{project_id}/segments', { ...projectParams(pid), body })), onSettled });
  const update = useMutation({
    mutationFn: ({ id, ...body }: Partial<SegmentBody> & { id: string }) => unwrap(api.PUT('/api/projects/{project_id}/segments/{segment_id}', { ...segmentPath(pid, id), body })),
    onSettled,
  });
  const remove = useMutation({ mutationFn: (id: string) => unwrap(api.DELETE('/api/projects/{project_id}/segments/{segment_id}', segmentPath(pid, id))), onSettled });
  return { create, update, remove };
}

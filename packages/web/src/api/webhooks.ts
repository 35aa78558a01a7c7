import { useMutation, useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { api, unwrap } from './client';
import { projectParams, teamKeys } from './queries';
import type { paths } from './schema';

type WebhookBody = paths['/api/projects/{project_id}/webhooks']['post']['requestBody']['content']['application/json'];

const hookPath = (project_id: string, webhook_id: string) => ({ params: { path: { project_id, webhook_id } } });
/** A send is queued, not made: its delivery is looked for a little later. */
const deliveriesSoon = (client: QueryClient, pid: string, webhookId: string) => () =>
  void setTimeout(() => void client.invalidateQueries({ queryKey: teamKeys.deliveries(pid, webhookId) }), 1500);

export const useDeliveries = (pid: string, webhookId: string) =>
  useQuery({
    queryKey: teamKeys.deliveries(pid, webhookId),
    queryFn: () => unwrap(api.GET('/api/projects/{project_id}/webhooks/{webhook_id}/deliveries', { params: { ...hookPath(pid, webhookId).params, query: { limit: 20 } } })),
    // Attempts land in the background: look again while the list is open.
    refetchInterval: 3000,
  });

/** Answers the webhook with its signing secret, which is never shown again. */
export function useCreateWebhook(pid: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: WebhookBody) => unwrap(api.POST('/api/projects/{project_id}/webhooks', { ...projectParams(pid), body })),
    onSuccess: () => client.invalidateQueries({ queryKey: teamKeys.webhooks(pid) }),
  });
}

/** An edit or the on/off switch; the list is read again, refused or not, so the switch shows what the server holds. */
export function useUpdateWebhook(pid: string, webhookId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: Partial<WebhookBody>) => unwrap(api.PUT('/api/projects/{project_id}/webhooks/{webhook_id}', { ...hookPath(pid, webhookId), body })),
    onSettled: () => client.invalidateQueries({ queryKey: teamKeys.webhooks(pid) }),
  });
}

export function useDeleteWebhook(pid: string, webhookId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.DELETE('/api/projects/{project_id}/webhooks/{webhook_id}', hookPath(pid, webhookId))),
    onSuccess: () => client.invalidateQueries({ queryKey: teamKeys.webhooks(pid) }),
  });
}

/** Queues a webhook.test event to this webhook, whatever it listens to. */
export function useTestWebhook(pid: string, webhookId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.POST('/api/projects/{project_id}/webhooks/{webhook_id}/test', hookPath(pid, webhookId))),
    onSuccess: deliveriesSoon(client, pid, webhookId),
  });
}

/** Sends a delivery again, as a new delivery. */
export function useResendDelivery(pid: string, webhookId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (deliveryId: string) =>
      unwrap(api.POST('/api/projects/{project_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/resend', { params: { path: { project_id: pid, webhook_id: webhookId, delivery_id: deliveryId } } })),
    onSuccess: deliveriesSoon(client, pid, webhookId),
  });
}

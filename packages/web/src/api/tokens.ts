import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from './client';
import { teamKeys } from './queries';
import type { paths } from './schema';

type TokenBody = paths['/api/tokens']['post']['requestBody']['content']['application/json'];

/** Answers the token with its secret, which is never shown again. */
export function useCreateToken() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: TokenBody) => unwrap(api.POST('/api/tokens', { body })),
    onSuccess: () => client.invalidateQueries({ queryKey: teamKeys.tokens }),
  });
}

export function useRevokeToken() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (tokenId: string) => unwrap(api.DELETE('/api/tokens/{token_id}', { params: { path: { token_id: tokenId } } })),
    onSuccess: () => client.invalidateQueries({ queryKey: teamKeys.tokens }),
  });
}

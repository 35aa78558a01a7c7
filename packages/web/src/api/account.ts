import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from './client';
import { teamKeys } from './queries';
import { session } from './session';

type Credentials = { email: string; password: string };
const logIn = async (body: Credentials) => session.signIn((await unwrap(api.POST('/auth/login', { body }))).token);

/** Logs in and keeps the login token. */
export const useLogIn = () => useMutation({ mutationFn: logIn });

/** Back from the OpenID provider: takes the login token the server left for this browser, once (docs/api.md, Account). */
export const useFinishSignIn = () => useMutation({ mutationFn: async () => session.signIn((await unwrap(api.POST('/auth/oidc/session'))).token, 'oidc') });

/** Creates the account (an invitation's secret proves its address), then logs in. */
export const useSignUp = () =>
  useMutation({
    mutationFn: async ({ invitation, ...credentials }: Credentials & { invitation: string | null }) => {
      await unwrap(api.POST('/auth/register', { body: { ...credentials, ...(invitation ? { invitation_token: invitation } : {}) } }));
      await logIn(credentials);
    },
  });

/** The server ends this login token everywhere (docs/api.md, Account); this browser forgets it, and every answer read with it, either way. */
export function useLogOut() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: async () => {
      await api.POST('/auth/logout').catch(() => undefined);
      session.signOut();
      client.clear();
    },
  });
}

/** Answers the same message whether or not the account exists. */
export const useForgotPassword = () => useMutation({ mutationFn: (email: string) => unwrap(api.POST('/auth/forgot-password', { body: { email } })) });

/** Every older login token stops working, this browser's too. */
export const useResetPassword = () =>
  useMutation({
    mutationFn: (body: { token: string; newPassword: string }) => unwrap(api.POST('/auth/reset-password', { body, parseAs: 'text' })), // answers text/plain
    onSuccess: () => session.signOut(),
  });

/** The address is proven: the account reads again, and so do the invitations waiting for its answer. */
export function useVerifyEmail() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (token: string) => unwrap(api.POST('/auth/verify-email', { body: { token } })),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: teamKeys.me });
      await client.invalidateQueries({ queryKey: teamKeys.invitations });
    },
  });
}

/** A new verification link (the server sends at most 5 an hour). */
export const useResendVerification = () => useMutation({ mutationFn: () => unwrap(api.POST('/auth/resend-verification')) });

/**
 * Deletes the signed-in account (the server ends its tokens and sessions, its memberships, and the
 * projects only it belongs to); then this browser forgets the session and every answer read with it.
 */
export function useDeleteAccount() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (password: string | null) => unwrap(api.DELETE('/api/me', { body: password === null ? {} : { password } })),
    onSuccess: () => {
      session.signOut();
      client.clear();
    },
  });
}

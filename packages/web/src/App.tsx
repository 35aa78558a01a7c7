import { lazy, Suspense, useEffect, useSyncExternalStore } from 'react';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { createBrowserRouter, Navigate, Outlet, useLocation } from 'react-router';
// The DOM's RouterProvider: it can render a navigation at once (navigate's flushSync).
import { RouterProvider } from 'react-router/dom';
import { ApiError, setSessionExpiredHandler } from './api/client';
import { session } from './api/session';
import { Loading } from './components/States';
import { AppLayout } from './components/AppLayout';
import { ProjectLayout } from './components/ProjectLayout';
import { LoginPage } from './pages/account/LoginPage';
import { SignupPage } from './pages/account/SignupPage';
import { ForgotPasswordPage } from './pages/account/ForgotPasswordPage';
import { ResetPasswordPage } from './pages/account/ResetPasswordPage';
import { VerifyEmailPage } from './pages/account/VerifyEmailPage';
import { AccountPage } from './pages/account/AccountPage';
import { PasswordOnly } from './pages/account/AccountFrame';
import { ProjectsPage } from './pages/projects/ProjectsPage';
import { ProjectSettingsPage } from './pages/projects/ProjectSettingsPage';
import { EnvironmentsPage } from './pages/environments/EnvironmentsPage';
import { FlagsPage } from './pages/flags/FlagsPage';
import { FlagPage } from './pages/flags/FlagPage';
import { TryItPage } from './pages/try/TryItPage';
import { ConnectPage } from './pages/connect/ConnectPage';
import { MembersPage } from './pages/members/MembersPage';
import { AuditPage } from './pages/audit/AuditPage';
import { WebhooksPage } from './pages/webhooks/WebhooksPage';
import { TokensPage } from './pages/tokens/TokensPage';
import { SegmentsPage } from './pages/targeting/SegmentsPage';
import { ChangeRequestsPage } from './pages/changes/ChangeRequestsPage';
import { ChangeRequestPage } from './pages/changes/ChangeRequestPage';
import { MetricsPage } from './pages/experiments/MetricsPage';
import { ExperimentsPage } from './pages/experiments/ExperimentsPage';
import { ExperimentPage } from './pages/experiments/ExperimentPage';

// The history page carries the chart library: loaded when first opened, not on first load.
const UsagePage = lazy(() => import('./pages/usage/UsagePage'));

const queryClient = new QueryClient({
  defaultOptions: {
    queries: { retry: (count, error) => !(error instanceof ApiError && error.status >= 400 && error.status < 500) && count < 2, staleTime: 5_000 },
  },
});

const useSignedIn = () => useSyncExternalStore(session.subscribe, () => session.token() !== null);

/** Pages that need a session: without one, to the login page, which brings the person back here. */
function RequireSession() {
  const signedIn = useSignedIn();
  const location = useLocation();
  if (!signedIn) return <Navigate to={`/login?next=${encodeURIComponent(location.pathname + location.search)}`} replace />;
  return <Outlet />;
}

const router = createBrowserRouter([
  { path: '/login', element: <LoginPage /> },
  // With PASSWORD_LOGIN=false these send the person to the OpenID provider instead.
  { path: '/signup', element: <PasswordOnly><SignupPage /></PasswordOnly> },
  // The invitation email links here (docs/api.md, "Members": <PUBLIC_URL>/register?invitation=<secret>).
  { path: '/register', element: <PasswordOnly><SignupPage /></PasswordOnly> },
  { path: '/forgot-password', element: <PasswordOnly><ForgotPasswordPage /></PasswordOnly> },
  { path: '/reset-password', element: <PasswordOnly><ResetPasswordPage /></PasswordOnly> },
  // The verification email links here (docs/api.md, "Verified addresses": <PUBLIC_URL>/verify-email?token=…).
  { path: '/verify-email', element: <VerifyEmailPage /> },
  {
    element: <RequireSession />,
    children: [
      {
        element: <AppLayout />,
        children: [
          { path: '/', element: <ProjectsPage /> },
          { path: '/account', element: <AccountPage /> },
          { path: '/account/tokens', element: <TokensPage /> },
          {
            path: '/projects/:projectId',
            element: <ProjectLayout />,
            children: [
              { index: true, element: <FlagsPage /> },
              { path: 'flags/:envId/:flagId', element: <FlagPage /> },
              { path: 'segments', element: <SegmentsPage /> },
              { path: 'environments', element: <EnvironmentsPage /> },
              { path: 'change-requests', element: <ChangeRequestsPage /> },
              { path: 'change-requests/:crId', element: <ChangeRequestPage /> },
              { path: 'experiments', element: <ExperimentsPage /> },
              { path: 'experiments/:envId/:experimentId', element: <ExperimentPage /> },
              { path: 'metrics', element: <MetricsPage /> },
              { path: 'try', element: <TryItPage /> },
              {
                path: 'usage',
                element: (
                  <Suspense fallback={<Loading what="usage" />}>
                    <UsagePage />
                  </Suspense>
                ),
              },
              { path: 'connect', element: <ConnectPage /> },
              { path: 'members', element: <MembersPage /> },
              { path: 'audit', element: <AuditPage /> },
              { path: 'webhooks', element: <WebhooksPage /> },
              { path: 'settings', element: <ProjectSettingsPage /> },
            ],
          },
          { path: '*', element: <NotFoundPage /> },
        ],
      },
    ],
  },
]);

function NotFoundPage() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        <a href="/">Back to your projects</a>
      </p>
    </section>
  );
}

export function App() {
  // An expired or revoked token: sign out, and let RequireSession send the person to log in.
  useEffect(() => {
    setSessionExpiredHandler(() => {
      if (session.token() === null) return;
      session.signOut();
      queryClient.clear();
    });
  }, []);
  return (
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  );
}

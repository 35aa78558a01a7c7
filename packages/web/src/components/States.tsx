import type { ReactNode } from 'react';

export function Loading({ what }: { what: string }) {
  return (
    <p className="state" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> Loading {what}…
    </p>
  );
}

export function ErrorState({ error, retry }: { error: unknown; retry?: () => void }) {
  return (
    <div className="state state-error" role="alert">
      <p>{error instanceof Error ? error.message : 'Something went wrong.'}</p>
      {retry && (
        <button type="button" className="secondary" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** An empty list: its title is a heading one level below the page's or section's own (h3 under an h2, h2 under an h1). */
export function Empty({ title, level = 3, children }: { title: string; level?: 2 | 3; children?: ReactNode }) {
  const Heading = level === 2 ? 'h2' : 'h3';
  return (
    <div className="state state-empty">
      <Heading>{title}</Heading>
      {children}
    </div>
  );
}

/** Loading, error, or the content: every page's data goes through one of the three. */
export function QueryState<T>({ query, what, children }: { query: { data: T | undefined; error: unknown; isPending: boolean; refetch: () => unknown }; what: string; children: (data: T) => ReactNode }) {
  if (query.isPending) return <Loading what={what} />;
  if (query.error || query.data === undefined) return <ErrorState error={query.error} retry={() => void query.refetch()} />;
  return <>{children(query.data)}</>;
}

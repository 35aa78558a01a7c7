import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, ApiError } from './client';
import type { components } from './schema';
import { projectParams } from './queries';

export type ImportPlan = components['schemas']['ImportPlan'];
export type UnleashAnswer = components['schemas']['UnleashImportAnswer'];
export type PlanItem = ImportPlan['create'][number];
export type DocumentFormat = 'json' | 'yaml';

/** A refused document: the server's message and each problem with where it is. */
export class DocumentRefused extends ApiError {
  constructor(
    status: number,
    message: string,
    readonly problems: { path: string; message: string }[],
  ) {
    super(status, message);
  }
}

/** The answer's data, or DocumentRefused (a 400 with problems) or ApiError, with the server's message. */
async function answered<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: Awaited<typeof call>;
  try {
    result = await call;
  } catch {
    throw new ApiError(0, 'The server cannot be reached. Check your connection and try again.');
  }
  if (result.response.ok) return result.data as T;
  const error = (result.error ?? {}) as { message?: string; problems?: { path: string; message: string }[] };
  const message = error.message ?? result.response.statusText;
  if (error.problems?.length) throw new DocumentRefused(result.response.status, message, error.problems);
  throw new ApiError(result.response.status, message);
}

/** The project's document as text (a read for a download, not kept in the query cache). */
export async function exportDocument(pid: string, format: DocumentFormat): Promise<string> {
  const text = await answered(api.GET('/api/projects/{project_id}/export', { params: { path: { project_id: pid }, query: { format } }, parseAs: 'text' }));
  return text as unknown as string;
}

/** JSON when the text parses as JSON, else sent as YAML for the server to read. */
const formatOf = (text: string): DocumentFormat => {
  try {
    JSON.parse(text);
    return 'json';
  } catch {
    return 'yaml';
  }
};

/** Everything of the project an import may change is read again once one is applied. */
const refreshProject = (client: ReturnType<typeof useQueryClient>, plan: { dry_run: boolean }) => {
  if (!plan.dry_run) void client.invalidateQueries();
};

export function useImportDocument(pid: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ text, mode, dryRun }: { text: string; mode: 'merge' | 'replace'; dryRun: boolean }) =>
      answered(
        api.POST('/api/projects/{project_id}/import', {
          params: { path: { project_id: pid }, query: { mode, dry_run: dryRun } },
          body: text,
          bodySerializer: (body: unknown) => body as string,
          headers: { 'content-type': formatOf(text) === 'json' ? 'application/json' : 'application/yaml' },
        }),
      ),
    onSuccess: (plan) => refreshProject(client, plan),
  });
}

export function useImportUnleash(pid: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ exports, segments, dryRun }: { exports: unknown[]; segments: unknown | null; dryRun: boolean }) =>
      answered(api.POST('/api/projects/{project_id}/import/unleash', { ...projectParams(pid), params: { ...projectParams(pid).params, query: { dry_run: dryRun } }, body: { exports, ...(segments === null ? {} : { segments }) } })),
    onSuccess: (answer) => refreshProject(client, answer),
  });
}

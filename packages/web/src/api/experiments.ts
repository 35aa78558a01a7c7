import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap, ApiError } from './client';
import { envParams, projectParams } from './queries';
import type { components, paths } from './schema';
import { session } from './session';

export type Metric = components['schemas']['Metric'];
export type Experiment = components['schemas']['Experiment'];
export type MetricBody = paths['/api/projects/{project_id}/metrics']['post']['requestBody']['content']['application/json'];
export type ExperimentBody = paths['/api/projects/{project_id}/environments/{env_id}/experiments']['post']['requestBody']['content']['application/json'];
export type MetricRole = ExperimentBody['metrics'][number]['role'];

/** One comparison of an arm with the control (docs/experiments.md, "How results are computed"). */
export interface Comparison {
  estimate: number;
  /** [low, high] (the generated schema types it as number[]). */
  ci: number[];
  p_value: number;
}
export interface ArmVersusControl {
  absolute: Comparison;
  relative: Comparison | null;
  chance_to_win: number | null;
  significant: boolean;
  cuped_applied: boolean;
}
export interface MetricResult {
  metric_id: string;
  key: string;
  role: MetricRole;
  arms: Record<string, { units: number; mean: number; variance: number }>;
  versus_control: Record<string, ArmVersusControl>;
}
/**
 * GET …/experiments/{id}/results as the page reads it (components['schemas']['ExperimentResults'],
 * spelled out so the parts read one by one have names); normaliseResults fills in what an answer lacks.
 */
export interface Results {
  computed_at: string | null;
  units: number;
  arms: Record<string, { units: number; expected_share: number }>;
  srm: { p_value: number; flagged: boolean } | null;
  multiple_exposures: { units: number; share: number } | null;
  metrics: MetricResult[];
  enough_data: boolean;
}

export const experimentKeys = {
  metrics: (pid: string) => ['metrics', pid] as const,
  experiments: (envId: string) => ['experiments', envId] as const,
  experiment: (experimentId: string) => ['experiment', experimentId] as const,
  results: (experimentId: string) => ['experimentResults', experimentId] as const,
};

const metricPath = (project_id: string, metric_id: string) => ({ params: { path: { project_id, metric_id } } });
const experimentPath = (project_id: string, env_id: string, experiment_id: string) => ({ params: { path: { project_id, env_id, experiment_id } } });

export const useMetrics = (pid: string) =>
  useQuery({ queryKey: experimentKeys.metrics(pid), queryFn: () => unwrap(api.GET('/api/projects/{project_id}/metrics', projectParams(pid))) });

/** The metric writes of a project; each reads the list again, refused or not. A refusal (400, 409 key taken or in use) carries the server's message. */
export function useMetricMutations(pid: string) {
  const client = useQueryClient();
  const onSettled = () => client.invalidateQueries({ queryKey: experimentKeys.metrics(pid) });
  const create = useMutation({ mutationFn: (body: MetricBody) => unwrap(api.POST('/api/projects/{project_id}/metrics', { ...projectParams(pid), body })), onSettled });
  const update = useMutation({
    mutationFn: ({ id, ...body }: Partial<MetricBody> & { id: string }) => unwrap(api.PUT('/api/projects/{project_id}/metrics/{metric_id}', { ...metricPath(pid, id), body })),
    onSettled,
  });
  const remove = useMutation({ mutationFn: (id: string) => unwrap(api.DELETE('/api/projects/{project_id}/metrics/{metric_id}', metricPath(pid, id))), onSettled });
  return { create, update, remove };
}

export const useExperiments = (pid: string, envId: string) =>
  useQuery({
    queryKey: experimentKeys.experiments(envId),
    enabled: envId !== '',
    queryFn: () => unwrap(api.GET('/api/projects/{project_id}/environments/{env_id}/experiments', envParams(pid, envId))),
  });

export const useExperiment = (pid: string, envId: string, experimentId: string) =>
  useQuery({
    queryKey: experimentKeys.experiment(experimentId),
    queryFn: () => unwrap(api.GET('/api/projects/{project_id}/environments/{env_id}/experiments/{experiment_id}', experimentPath(pid, envId, experimentId))),
  });

/** Create, start, stop and delete; the list and the experiment are read again after each. */
export function useExperimentMutations(pid: string, envId: string) {
  const client = useQueryClient();
  const refresh = (experimentId?: string) =>
    Promise.all([
      client.invalidateQueries({ queryKey: experimentKeys.experiments(envId) }),
      experimentId ? client.invalidateQueries({ queryKey: experimentKeys.experiment(experimentId) }) : undefined,
      experimentId ? client.invalidateQueries({ queryKey: experimentKeys.results(experimentId) }) : undefined,
    ]);
  const create = useMutation({
    mutationFn: (body: ExperimentBody) => unwrap(api.POST('/api/projects/{project_id}/environments/{env_id}/experiments', { ...envParams(pid, envId), body })),
    onSettled: () => refresh(),
  });
  const start = useMutation({
    mutationFn: (id: string) => unwrap(api.POST('/api/projects/{project_id}/environments/{env_id}/experiments/{experiment_id}/start', experimentPath(pid, envId, id))),
    onSettled: (_data, _error, id) => refresh(id),
  });
  const stop = useMutation({
    mutationFn: ({ id, ...body }: { id: string; decision?: string; note?: string }) =>
      unwrap(api.POST('/api/projects/{project_id}/environments/{env_id}/experiments/{experiment_id}/stop', { ...experimentPath(pid, envId, id), body })),
    onSettled: (_data, _error, { id }) => refresh(id),
  });
  const remove = useMutation({
    mutationFn: (id: string) => unwrap(api.DELETE('/api/projects/{project_id}/environments/{env_id}/experiments/{experiment_id}', experimentPath(pid, envId, id))),
    onSettled: () => refresh(),
  });
  return { create, start, stop, remove };
}

/**
 * The latest computation of an experiment's results (docs/experiments.md, "Results"). A draft has
 * none (the server answers 409); a running one is read again every 10 s (the server computes again
 * within seconds of new data).
 */
export function useResults(pid: string, envId: string, experiment: Experiment | undefined) {
  return useQuery({
    queryKey: experimentKeys.results(experiment?.id ?? ''),
    enabled: experiment !== undefined && experiment.status !== 'draft',
    refetchInterval: experiment?.status === 'running' ? 10_000 : false,
    queryFn: async () => normaliseResults(await unwrap(api.GET('/api/projects/{project_id}/environments/{env_id}/experiments/{experiment_id}/results', experimentPath(pid, envId, experiment?.id ?? '')))),
  });
}

/**
 * GET …/units.csv (editor): one row per exposed unit, for analysis elsewhere. Fetched with the
 * login token (a plain link would not carry it) and handed to the browser as a download.
 */
export async function downloadUnits(pid: string, envId: string, experiment: Experiment): Promise<void> {
  const response = await fetch(`/api/projects/${pid}/environments/${envId}/experiments/${experiment.id}/units.csv`, { headers: { authorization: `Bearer ${session.token() ?? ''}` } }).catch(() => {
    throw new ApiError(0, 'The server cannot be reached. Check your connection and try again.');
  });
  if (!response.ok) throw new ApiError(response.status, ((await response.json().catch(() => null)) as { message?: string } | null)?.message ?? response.statusText);
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement('a');
  link.href = url;
  link.download = `experiment-${experiment.flag_key}-units.csv`;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** The answer with every missing part filled in as "nothing yet", so the page never reads past an absent field. */
export function normaliseResults(body: Partial<Results> | null): Results {
  return {
    computed_at: body?.computed_at ?? null,
    units: body?.units ?? 0,
    arms: body?.arms ?? {},
    srm: body?.srm ?? null,
    multiple_exposures: body?.multiple_exposures ?? null,
    metrics: Array.isArray(body?.metrics) ? body.metrics : [],
    enough_data: body?.enough_data ?? false,
  };
}

/**
 * The experiment's timeline from the audit log: its own events, and the changes to its flag and
 * the flag's rules in its environment since it was created (the audit log filters by resource;
 * rules are told apart by their flag's key). At most 200 of each, newest first.
 */
export function useTimeline(pid: string, experiment: Experiment | undefined) {
  return useQuery({
    queryKey: ['experimentTimeline', experiment?.id ?? '', experiment?.status ?? ''],
    enabled: experiment !== undefined,
    queryFn: async () => {
      if (!experiment) return [];
      const audit = (query: NonNullable<paths['/api/projects/{project_id}/audit']['get']['parameters']['query']>) =>
        unwrap(api.GET('/api/projects/{project_id}/audit', { params: { path: { project_id: pid }, query: { limit: 200, ...query } } })).then((page) => page.items);
      const [own, flag, rules] = await Promise.all([
        audit({ resource_type: 'experiment', resource_id: experiment.id }),
        audit({ resource_type: 'flag', resource_id: experiment.flag_id, environment_id: experiment.environment_id }),
        audit({ resource_type: 'rule', environment_id: experiment.environment_id }),
      ]);
      const since = experiment.created_at;
      const until = experiment.stopped_at ?? '9999';
      const flagChanges = [...flag, ...rules.filter((event) => event.resource_key === experiment.flag_key)].filter((event) => event.created_at >= since && event.created_at <= until);
      return [...own, ...flagChanges].sort((a, b) => a.created_at.localeCompare(b.created_at));
    },
  });
}

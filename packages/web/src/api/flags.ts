import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, unwrap, type Flag, type ProjectFlag, type Rule, type Variant } from './client';
import { isDrafted, needsApproval, writeOrDraft } from './drafts';
import { envParams, flagParams, keys } from './queries';

type FlagChanges = Partial<Pick<Flag, 'name' | 'description' | 'rollout_percentage' | 'everyone_else'>>;
/** What a rule's dialog writes: the seed types' value, or conditions, with the rule's rollout and what it serves. */
export type RuleBody = Pick<Rule, 'rule_type' | 'rule_value' | 'conditions' | 'enabled' | 'rollout_percentage' | 'serve'> & { variant?: Rule['variant'] };
type RuleChanges = Partial<RuleBody & Pick<Rule, 'priority'>>;

export function useCreateFlag(pid: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ envId, ...body }: { envId: string; name: string; key: string; description: string | null }) =>
      writeOrDraft(client, pid, envId, { op: 'flag.create', flag: body }, () => unwrap(api.POST('/api/projects/{project_id}/environments/{env_id}/flags', { ...envParams(pid, envId), body }))),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.projectFlags(pid) }),
  });
}

/** Name, description, rollout or everyone else: the answer is shown at once, the overview refreshed behind. */
export function useUpdateFlag(pid: string, envId: string, flagId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (changes: FlagChanges) =>
      writeOrDraft(client, pid, envId, { op: 'flag.update', flag_id: flagId, set: changes }, () => unwrap(api.PUT('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}', { ...flagParams(pid, envId, flagId), body: changes }))),
    onSuccess: (updated) => {
      if (isDrafted(updated)) return;
      client.setQueryData(keys.flag(flagId), updated);
      void client.invalidateQueries({ queryKey: keys.projectFlags(pid) });
    },
  });
}

/**
 * A flag's variants and off variant, written together in one PUT (docs/variants.md: the server checks
 * them as a whole). Rules may name variants, so they are fetched again too.
 */
export function useSaveVariants(pid: string, envId: string, flagId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { variants: Variant[]; off_variant: string | null }) =>
      writeOrDraft(client, pid, envId, { op: 'flag.update', flag_id: flagId, set: body }, () => unwrap(api.PUT('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}', { ...flagParams(pid, envId, flagId), body }))),
    onSuccess: (updated) => void (isDrafted(updated) || client.setQueryData(keys.flag(flagId), updated)),
    onSettled: () => Promise.all([keys.rules(flagId), keys.projectFlags(pid)].map((queryKey) => client.invalidateQueries({ queryKey }))),
  });
}

/** A flag's prerequisites, written as a whole (docs/prerequisites.md); the overview shows them, so it is fetched again. */
export function useSavePrerequisites(pid: string, envId: string, flagId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { prerequisites: Flag['prerequisites'] }) =>
      writeOrDraft(client, pid, envId, { op: 'flag.update', flag_id: flagId, set: body }, () => unwrap(api.PUT('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}', { ...flagParams(pid, envId, flagId), body }))),
    onSuccess: (updated) => void (isDrafted(updated) || client.setQueryData(keys.flag(flagId), updated)),
    onSettled: () => client.invalidateQueries({ queryKey: keys.projectFlags(pid) }),
  });
}

/** Deletes the flag; `leave` takes the person off its page before its data goes (see useRemoveMember). */
export function useDeleteFlag(pid: string, envId: string, flagId: string, leave: () => void) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => writeOrDraft(client, pid, envId, { op: 'flag.delete', flag_id: flagId }, () => unwrap(api.DELETE('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}', flagParams(pid, envId, flagId)))),
    onSuccess: (result) => {
      if (isDrafted(result)) return;
      // Out of the overview before the page that lists it shows (its refetch comes after): the deleted flag never flashes there.
      client.setQueryData(keys.projectFlags(pid), (flags: ProjectFlag[] | undefined) => flags && withoutFlag(flags, flagId));
      leave();
      client.removeQueries({ queryKey: keys.flag(flagId) });
      return client.invalidateQueries({ queryKey: keys.projectFlags(pid) });
    },
  });
}

/** The overview without one environment's flag; a key left in no environment goes too. */
function withoutFlag(flags: ProjectFlag[], flagId: string): ProjectFlag[] {
  return flags
    .map((flag) => ({ ...flag, environments: Object.fromEntries(Object.entries(flag.environments).filter(([, state]) => state.flag_id !== flagId)) }))
    .filter((flag) => Object.keys(flag.environments).length > 0);
}

/** Copies the flag with its rules to another environment of the project. */
export function useCopyFlag(pid: string, envId: string, flagId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { target_environment_id: string; overwrite: boolean }) =>
      unwrap(api.POST('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/copy', { ...flagParams(pid, envId, flagId), body })),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.projectFlags(pid) }),
  });
}

/**
 * Switches a flag on or off at once in every view, and puts it back if the server refuses
 * (docs/adr/0013-dashboard.md: optimistic toggles that roll back on error).
 */
export function useSetEnabled(pid: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ envId, flagId, enabled }: { envId: string; envKey: string; flagId: string; enabled: boolean }) =>
      writeOrDraft(client, pid, envId, { op: 'flag.update', flag_id: flagId, set: { enabled } }, () => unwrap(api.PUT('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}', { ...flagParams(pid, envId, flagId), body: { enabled } }))),
    onMutate: async ({ envId, envKey, flagId, enabled }) => {
      if (needsApproval(client, pid, envId)) return undefined; // drafted: the flag page shows the draft
      await client.cancelQueries({ queryKey: keys.projectFlags(pid) });
      await client.cancelQueries({ queryKey: keys.flag(flagId) });
      const before = { list: client.getQueryData<ProjectFlag[]>(keys.projectFlags(pid)), flag: client.getQueryData<Flag>(keys.flag(flagId)) };
      client.setQueryData<ProjectFlag[]>(keys.projectFlags(pid), (rows) =>
        rows?.map((row) => {
          const state = row.environments[envKey];
          return state?.flag_id === flagId ? { ...row, environments: { ...row.environments, [envKey]: { ...state, enabled } } } : row;
        }),
      );
      client.setQueryData<Flag>(keys.flag(flagId), (flag) => (flag ? { ...flag, enabled } : flag));
      return before;
    },
    onError: (_error, { flagId }, before) => {
      if (!before) return; // drafted: nothing was shown early
      client.setQueryData(keys.projectFlags(pid), before.list);
      client.setQueryData(keys.flag(flagId), before.flag);
    },
    onSettled: (_data, _error, { flagId }) => {
      void client.invalidateQueries({ queryKey: keys.projectFlags(pid) });
      void client.invalidateQueries({ queryKey: keys.flag(flagId) });
    },
  });
}

/**
 * The rule writes of one flag. Each refreshes the rules and the overview (which counts them)
 * when it settles, refused or not, so the list shows what the server holds.
 */
export function useRuleMutations(pid: string, envId: string, flagId: string) {
  const client = useQueryClient();
  const path = flagParams(pid, envId, flagId).params.path;
  const rule = (rule_id: string) => ({ params: { path: { ...path, rule_id } } });
  const put = (ruleId: string, body: RuleChanges) =>
    writeOrDraft(client, pid, envId, { op: 'rule.update', flag_id: flagId, rule_id: ruleId, set: body }, () => unwrap(api.PUT('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/rules/{rule_id}', { ...rule(ruleId), body })));
  // Segments say where they are used: a rule naming one changes that.
  const onSettled = () => Promise.all([keys.rules(flagId), keys.projectFlags(pid), keys.segments(pid)].map((queryKey) => client.invalidateQueries({ queryKey })));

  const create = useMutation({
    mutationFn: (body: RuleBody & Pick<Rule, 'priority'>) =>
      writeOrDraft(client, pid, envId, { op: 'rule.create', flag_id: flagId, rule: body }, () => unwrap(api.POST('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/rules', { params: { path }, body }))),
    onSettled,
  });
  const update = useMutation({ mutationFn: ({ id, ...body }: RuleChanges & { id: string }) => put(id, body), onSettled });
  const remove = useMutation({
    mutationFn: (ruleId: string) => writeOrDraft(client, pid, envId, { op: 'rule.delete', flag_id: flagId, rule_id: ruleId }, () => unwrap(api.DELETE('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/rules/{rule_id}', rule(ruleId)))),
    onSettled,
  });
  /** A new order, shown at once; only rules whose priority changes are written; the old order comes back if one is refused. */
  const reorder = useMutation({
    mutationFn: async (ordered: Rule[]) => {
      for (const item of numbered(ordered)) {
        const old = ordered.find((candidate) => candidate.id === item.id);
        if (old && old.priority !== item.priority) await put(item.id, { priority: item.priority });
      }
    },
    onMutate: (ordered) => {
      if (needsApproval(client, pid, envId)) return undefined; // drafted: the list stays as the server holds it
      const before = client.getQueryData<Rule[]>(keys.rules(flagId));
      client.setQueryData(keys.rules(flagId), numbered(ordered));
      return before;
    },
    onError: (_error, _ordered, before) => void (before && client.setQueryData(keys.rules(flagId), before)),
    onSettled,
  });
  return { create, update, remove, reorder };
}

/** Priorities n-1 … 0 from the top. */
const numbered = (ordered: Rule[]) => ordered.map((rule, i) => ({ ...rule, priority: ordered.length - 1 - i }));

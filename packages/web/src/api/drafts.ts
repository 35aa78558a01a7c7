import { useMemo, useSyncExternalStore } from 'react';
import type { QueryClient } from '@tanstack/react-query';
import { keys, useEnvironments } from './queries';
import type { Environment, Flag, RequestedChange } from './client';

/**
 * Draft change requests (docs/change-management.md): in an environment that needs approval, the
 * dashboard's edits are collected here, per project and environment, until the person sends them
 * as one change request. Kept in this browser (localStorage), so a reload keeps them.
 */
export interface DraftItem {
  /** This browser's id of the item. */
  id: string;
  change: RequestedChange;
  /** The flag (or its key) the change is about, for people to read. */
  subject: string;
}

const storageKey = (pid: string, envId: string) => `guidon.draft.${pid}.${envId}`;
const listeners = new Set<() => void>();
const subscribe = (listener: () => void) => {
  listeners.add(listener);
  return () => void listeners.delete(listener);
};

function read(pid: string, envId: string): DraftItem[] {
  try {
    return JSON.parse(localStorage.getItem(storageKey(pid, envId)) ?? '[]') as DraftItem[];
  } catch {
    return [];
  }
}

function write(pid: string, envId: string, items: DraftItem[]): void {
  if (items.length === 0) localStorage.removeItem(storageKey(pid, envId));
  else localStorage.setItem(storageKey(pid, envId), JSON.stringify(items));
  for (const listener of listeners) listener();
}

/** The same edit twice is one change: a flag's fields and a rule's fields are merged into the change already there. */
function merged(items: DraftItem[], change: RequestedChange, subject: string): DraftItem[] {
  const same = items.findIndex(
    ({ change: other }) =>
      (other.op === 'flag.update' && change.op === 'flag.update' && other.flag_id === change.flag_id) ||
      (other.op === 'rule.update' && change.op === 'rule.update' && other.rule_id === change.rule_id),
  );
  if (same === -1) return [...items, { id: crypto.randomUUID(), change, subject }];
  const existing = items[same]!;
  const set = { ...(existing.change as { set: object }).set, ...(change as { set: object }).set };
  return items.map((item, i) => (i === same ? { ...existing, change: { ...existing.change, set } as RequestedChange } : item));
}

export const drafts = {
  add(pid: string, envId: string, change: RequestedChange, subject: string): void {
    write(pid, envId, merged(read(pid, envId), change, subject));
  },
  remove(pid: string, envId: string, id: string): void {
    write(pid, envId, read(pid, envId).filter((item) => item.id !== id));
  },
  clear(pid: string, envId: string): void {
    write(pid, envId, []);
  },
};

/** The draft of the environment: its items, in the order they were made. */
export function useDraft(pid: string, envId: string): DraftItem[] {
  const text = useSyncExternalStore(subscribe, () => localStorage.getItem(storageKey(pid, envId)) ?? '[]');
  return useMemo(() => {
    try {
      return JSON.parse(text) as DraftItem[];
    } catch {
      return [];
    }
  }, [text]);
}

/** The environment when changes to it need an approved change request, else null. */
export function useReviewed(pid: string, envId: string) {
  const environments = useEnvironments(pid);
  const environment = environments.data?.find((env) => env.id === envId);
  return environment && environment.approvals_required > 0 ? environment : null;
}

/** What a draft-aware write answers when the change went into the draft instead of the server. */
export const DRAFTED = { drafted: true } as const;
export type Drafted = typeof DRAFTED;
export const isDrafted = (value: unknown): value is Drafted => value === DRAFTED;

/** Whether changes to the environment need an approved change request, from the environments already loaded. */
export function needsApproval(client: QueryClient, pid: string, envId: string): boolean {
  return (client.getQueryData<Environment[]>(keys.environments(pid)) ?? []).some((env) => env.id === envId && env.approvals_required > 0);
}

/**
 * The one way the flag page writes: in an environment that needs approval the change goes into
 * the environment's draft (answering DRAFTED); elsewhere `direct` writes it at once.
 */
export function writeOrDraft<T>(client: QueryClient, pid: string, envId: string, change: RequestedChange, direct: () => Promise<T>): Promise<T | Drafted> {
  if (!needsApproval(client, pid, envId)) return direct();
  const subject = 'flag_id' in change ? (client.getQueryData<Flag>(keys.flag(change.flag_id))?.key ?? 'a flag') : change.op === 'flag.create' ? change.flag.key : 'a schedule';
  drafts.add(pid, envId, change, subject);
  return Promise.resolve(DRAFTED);
}

/** The flag as the draft would make it: its flag.update changes laid over it (rules, schedules and deletion are listed in the draft). */
export function withDraft(flag: Flag, items: readonly DraftItem[]): Flag {
  let shown = flag;
  for (const { change } of items) if (change.op === 'flag.update' && change.flag_id === flag.id) shown = { ...shown, ...change.set } as Flag;
  return shown;
}

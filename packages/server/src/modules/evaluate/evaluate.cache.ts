import { randomUUID } from 'node:crypto';
import { compileFlag, compileFlagSet, type CompiledFlag, type CompiledFlagSet } from '@guidon/engine';
import type { Db } from '../../db/database.js';
import { loadProjectBySdkKey } from './evaluate.repository.js';
import { outcomeOf } from './outcomes.js';
import { sdkKeyHash } from './stream.tokens.js';

/** An environment's flags, as parallel arrays in answer order. */
export interface CompiledEnvironment {
  readonly projectId: string;
  readonly environmentId: string;
  /** Names this flag list in stored history (a new one each time the environment is compiled). */
  readonly snapshotId: string;
  readonly flagIds: readonly string[];
  readonly flagKeys: readonly string[];
  /** Each flag alone (one-flag evaluations: OFREP). */
  readonly flags: readonly CompiledFlag[];
  /** Every flag at once, as outcome codes (evaluate, OFREP bulk, the stream). */
  readonly flagSet: CompiledFlagSet;
  /** `"<key>":` for each flag, with the separating comma in front from the second on. */
  readonly jsonKeys: readonly string[];
}

export interface CompiledProject {
  readonly projectId: string;
  /** projects.revision when it was read. */
  readonly revision: number;
  /** By environment key. */
  readonly environments: ReadonlyMap<string, CompiledEnvironment>;
}

/**
 * The compiled, in-memory view that evaluate reads: SDK key → project → environment → flags.
 * A request for a known key touches no database. Every write to a project calls
 * invalidateProject, and the next request rebuilds the view from the database.
 */
export class EvaluateCache {
  private readonly bySdkKey = new Map<string, CompiledProject>();
  /** Every SDK key a project is compiled under: after a key rotation seen late, the old and the new one. */
  private readonly sdkKeysOfProject = new Map<string, Set<string>>();
  private readonly loading = new Map<string, Promise<CompiledProject | null>>();
  /** Bumped by every invalidation: a load that overlapped one answers its caller but is not kept. */
  private generation = 0;
  private readonly invalidationListeners = new Set<(projectId: string) => void>();

  constructor(private readonly db: Db) {}

  /** The project that owns the SDK key, or null when no project has it. */
  project(sdkKey: string): CompiledProject | Promise<CompiledProject | null> {
    const hit = this.bySdkKey.get(sdkKey);
    if (hit) return hit;
    let pending = this.loading.get(sdkKey);
    if (!pending) {
      pending = this.load(sdkKey).finally(() => {
        if (this.loading.get(sdkKey) === pending) this.loading.delete(sdkKey);
      });
      this.loading.set(sdkKey, pending);
    }
    return pending;
  }

  /**
   * The project as compiled under an SDK key with this hash (a stream token names its key by
   * hash), or undefined when it is not compiled under it: a key rotation drops every entry of
   * the project, so a retired key is not found here.
   */
  compiledUnderKeyHash(projectId: string, keyHash: string): CompiledProject | undefined {
    for (const sdkKey of this.sdkKeysOfProject.get(projectId) ?? []) if (sdkKeyHash(sdkKey) === keyHash) return this.bySdkKey.get(sdkKey);
    return undefined;
  }

  /** Every compiled entry (one per SDK key), with the revision it was compiled at. */
  entries(): { projectId: string; revision: number }[] {
    return [...this.bySdkKey.values()].map(({ projectId, revision }) => ({ projectId, revision }));
  }

  /** Compiled entries held (one per SDK key). */
  get size(): number {
    return this.bySdkKey.size;
  }

  /**
   * Calls listener with the project id on each invalidation, whatever caused it (a local write,
   * another instance's notification, the revision check). It runs before the view is dropped, so
   * it must defer any reading of the cache. Returns the unsubscribe function.
   */
  onInvalidate(listener: (projectId: string) => void): () => void {
    this.invalidationListeners.add(listener);
    return () => this.invalidationListeners.delete(listener);
  }

  invalidateProject(projectId: string): void {
    for (const listener of this.invalidationListeners) listener(projectId);
    this.generation++;
    // A load in flight may have read the state before this write: later requests must not join it.
    this.loading.clear();
    // Every entry of the project: one compiled under a rotated-out key must not outlive the rotation.
    for (const sdkKey of this.sdkKeysOfProject.get(projectId) ?? []) this.bySdkKey.delete(sdkKey);
    this.sdkKeysOfProject.delete(projectId);
  }

  private async load(sdkKey: string): Promise<CompiledProject | null> {
    const generation = this.generation;
    const stored = await loadProjectBySdkKey(this.db, sdkKey);
    if (!stored) return null;
    const environments = new Map<string, CompiledEnvironment>();
    for (const env of stored.environments) {
      environments.set(env.key, {
        projectId: stored.id,
        environmentId: env.id,
        snapshotId: randomUUID(),
        flagIds: env.flags.map((flag) => flag.id),
        flagKeys: env.flags.map((flag) => flag.key),
        flags: env.flags.map(compileFlag),
        flagSet: compileFlagSet(env.flags, codeOf),
        jsonKeys: env.flags.map((flag, i) => `${i === 0 ? '' : ','}${JSON.stringify(flag.key)}:`),
      });
    }
    const project: CompiledProject = { projectId: stored.id, revision: stored.revision, environments };
    if (generation === this.generation) {
      this.bySdkKey.set(sdkKey, project);
      let keys = this.sdkKeysOfProject.get(stored.id);
      if (!keys) this.sdkKeysOfProject.set(stored.id, (keys = new Set()));
      keys.add(sdkKey);
    }
    return project;
  }
}

const codeOf = (result: Parameters<typeof outcomeOf>[0]) => outcomeOf(result).code;

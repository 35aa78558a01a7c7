import { hash, randomUUID } from 'node:crypto';
import { compileFlagSet, type CompiledFlagSet, type Condition } from '@guidon/engine';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import { NotFound } from '../../errors.js';
import { LogThrottle } from '../../log-throttle.js';
import type { ChangeFeed } from '../changes/change-feed.js';
import { currentRevisions } from '../changes/revisions.js';
import type { BatchEnvironment } from '../history/history.protocol.js';
import { countingBase, type CountingBase } from '../history/history.recorder.js';
import { EnvironmentAnswers } from './evaluate.answers.js';
import type { EnvironmentView } from './environment-view.js';
import { loadProjectBySdkKey, type StoredEnvironment, type StoredFlag } from './evaluate.repository.js';
import { sdkKeyHash } from './sdk-key.js';

/**
 * One environment's flags compiled for evaluation, with every view derived from them: built
 * where the cache loads the project, dropped with it on the next change.
 */
export class CompiledEnvironment implements EnvironmentView {
  readonly environmentId: string;
  readonly key: string;
  /** Names this flag list in stored history (a new one each time the environment is compiled). */
  readonly snapshotId = randomUUID();
  readonly flagIds: readonly string[];
  readonly flagKeys: readonly string[];
  /** Every flag at once, as outcome codes (evaluate, OFREP, the stream). */
  readonly flagSet: CompiledFlagSet;
  /** Each key as JSON text, quotes and escapes included. */
  readonly quotedKeys: readonly string[];
  /** SHA-1 of the keys in order (and of the variants, when there are any): what an answer's ETag hashes besides its outcome codes. */
  readonly keysDigest: Uint8Array;
  /**
   * Bytes per evaluation: a flag's outcome code, then, when any flag has variants, a second byte
   * per flag after all the codes: its variant index (NO_VARIANT for a flag without). Answers,
   * ETags, the answer cache and history all read this many bytes.
   */
  readonly outcomeWidth: number;
  /** Per flag, its variants' keys in order (history's snapshot), or null; null when no flag has variants. */
  readonly flagVariants: readonly (readonly string[] | null)[] | null;
  /** Per flag, its prerequisites' keys (history's snapshot: the reason of an unmet one), or null; null when no flag has any. */
  readonly flagPrerequisites: readonly (readonly string[] | null)[] | null;
  /** Per flag and variant index, `,"variant":"<key>","value":<value>`: what a variant flag's answer adds. */
  readonly variantMembers: readonly (readonly string[] | null)[];
  /** Recent answers and the bytes to build new ones (evaluate.answers.ts). */
  readonly answers: EnvironmentAnswers;
  private withKinds: EnvironmentAnswers | undefined;
  readonly countingBase: CountingBase;
  /** The flags as loaded (evaluation order) and the project's segments: what the local-evaluation ruleset is built from. */
  readonly definitions: readonly StoredFlag[];
  readonly segments: ReadonlyMap<string, readonly Condition[]>;
  private readonly indexes: ReadonlyMap<string, number>;
  /** History's view of a one-flag evaluation per flag: a flag list of its own, made when first needed. */
  private readonly oneFlagViews: BatchEnvironment[] = [];

  constructor(
    readonly projectId: string,
    stored: StoredEnvironment,
    segments: ReadonlyMap<string, readonly Condition[]>,
  ) {
    this.environmentId = stored.id;
    this.key = stored.key;
    this.flagIds = stored.flags.map((flag) => flag.id);
    this.definitions = stored.flags;
    this.segments = segments;
    this.flagSet = compileFlagSet(stored.flags, { environment: stored.key, segments });
    this.flagKeys = this.flagSet.keys;
    this.quotedKeys = this.flagKeys.map((key) => JSON.stringify(key));
    const { variants, hasVariants, size } = this.flagSet;
    const prerequisites = stored.flags.map((flag) => (flag.prerequisites && flag.prerequisites.length > 0 ? flag.prerequisites.map((p) => p.flagKey) : null));
    this.flagPrerequisites = prerequisites.some((list) => list !== null) ? prerequisites : null;
    // A change of a variant's value, or of which parent a prerequisite names, changes answers
    // without changing their bytes of codes: the digest carries them.
    const digested: unknown[] = [this.flagKeys];
    if (hasVariants) digested.push(variants);
    if (this.flagPrerequisites !== null) digested.push(this.flagPrerequisites);
    this.keysDigest = hash('sha1', JSON.stringify(digested.length === 1 ? this.flagKeys : digested), 'buffer');
    this.outcomeWidth = hasVariants ? size * 2 : size;
    this.flagVariants = hasVariants ? variants.map((list) => (list === null ? null : list.map((variant) => variant.key))) : null;
    this.variantMembers = variants.map((list) => (list === null ? null : list.map(({ key, value }) => `,"variant":${JSON.stringify(key)},"value":${JSON.stringify(value)}`)));
    this.indexes = new Map(this.flagKeys.map((key, i) => [key, i]));
    this.answers = new EnvironmentAnswers(this);
    this.countingBase = countingBase(this.flagSet);
  }

  /** The same, each flag's answer with its kind (`X-Guidon-Answer: kind`, which Guidon's remote SDK sends): made when first asked for. */
  get answersWithKinds(): EnvironmentAnswers {
    return (this.withKinds ??= new EnvironmentAnswers(this, true));
  }

  /** The position of a flag in the environment, or -1. */
  indexOf(flagKey: string): number {
    return this.indexes.get(flagKey) ?? -1;
  }

  /** History's view of evaluating only the flag at `index`. */
  oneFlagView(index: number): BatchEnvironment {
    return (this.oneFlagViews[index] ??= {
      environmentId: this.environmentId,
      snapshotId: randomUUID(),
      flagIds: [this.flagIds[index]!],
      flagKeys: [this.flagKeys[index]!],
      flagVariants: this.flagVariants === null || this.flagVariants[index] === null ? null : [this.flagVariants[index]!],
      flagPrerequisites: this.flagPrerequisites === null || this.flagPrerequisites[index] === null ? null : [this.flagPrerequisites[index]!],
    });
  }
}

export interface CompiledProject {
  readonly projectId: string;
  /** projects.revision when it was read. */
  readonly revision: number;
  /** By environment key. */
  readonly environments: ReadonlyMap<string, CompiledEnvironment>;
}

/** The environment of an SDK request (every SDK surface): 404 when the project has no such key. */
export function environmentOf(project: CompiledProject | null, key: string): CompiledEnvironment {
  const environment = project?.environments.get(key);
  if (!environment) throw new NotFound(`Environment "${key}" not found in this project`);
  return environment;
}

/**
 * The compiled, in-memory view that the SDK surfaces read: SDK key → project → environment →
 * flags. A request for a known key touches no database. Every change the feed reports (a local
 * write, another instance's) drops the project's view, and the next request rebuilds it from
 * the database; a revision check every second is the safety net for a lost notification.
 */
export class EvaluateCache {
  private readonly bySdkKey = new Map<string, CompiledProject>();
  /** Every SDK key a project is compiled under: after a key rotation seen late, the old and the new one. */
  private readonly sdkKeysOfProject = new Map<string, Set<string>>();
  private readonly loading = new Map<string, Promise<CompiledProject | null>>();
  /** Bumped by every invalidation: a load that overlapped one answers its caller but is not kept. */
  private generation = 0;
  private readonly invalidationListeners = new Set<(projectId: string) => void>();
  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  private readonly checkFailureLog = new LogThrottle();
  /** When a revision check last confirmed (or corrected) every compiled project. */
  private lastConfirmedAt = Date.now();

  constructor(
    private readonly db: Db,
    feed: ChangeFeed,
    private readonly log: FastifyBaseLogger,
    private readonly checkIntervalMs = 1000,
  ) {
    feed.onChange((projectId) => this.invalidateProject(projectId));
    feed.onReconnect(() => void this.checkRevisions()); // notifications may have been missed while the carrier was away
  }

  start(): void {
    this.timer = setInterval(() => void this.checkRevisions(), this.checkIntervalMs);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

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

  /** Whether this compiled project is still what the cache serves: false once a change (a key rotation…) dropped it. */
  holds(project: CompiledProject): boolean {
    for (const sdkKey of this.sdkKeysOfProject.get(project.projectId) ?? []) if (this.bySdkKey.get(sdkKey) === project) return true;
    return false;
  }

  /** Compiled entries held (one per SDK key). */
  get size(): number {
    return this.bySdkKey.size;
  }

  /** Seconds since the compiled view was last confirmed current: how stale it can be if a notification was lost. */
  lagSeconds(): number {
    return (Date.now() - this.lastConfirmedAt) / 1000;
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

  /** Drops every compiled project whose revision moved (or that no longer exists). */
  async checkRevisions(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      // Every entry, not one per project: a project can be compiled under two SDK keys at different revisions.
      const compiled = [...this.bySdkKey.values()].map(({ projectId, revision }) => ({ projectId, revision }));
      if (compiled.length > 0) {
        const current = await currentRevisions(this.db, [...new Set(compiled.map((entry) => entry.projectId))]);
        for (const { projectId, revision } of compiled) {
          if (current.get(projectId) !== revision) this.invalidateProject(projectId);
        }
      }
      this.lastConfirmedAt = Date.now();
      if (this.checkFailureLog.recovered()) this.log.info('revision check works again');
    } catch (error) {
      if (this.checkFailureLog.due()) this.log.warn({ err: error }, 'revision check failed (database unreachable?); compiled projects are served as they are');
    } finally {
      this.checking = false;
    }
  }

  private async load(sdkKey: string): Promise<CompiledProject | null> {
    const generation = this.generation;
    const stored = await loadProjectBySdkKey(this.db, sdkKey);
    if (!stored) return null;
    const environments = new Map(stored.environments.map((env) => [env.key, new CompiledEnvironment(stored.id, env, stored.segments)]));
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

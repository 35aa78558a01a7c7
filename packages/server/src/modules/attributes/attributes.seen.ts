/**
 * The custom attribute names (never their values) that each environment's evaluate and OFREP
 * requests carry, so that the rule editor can offer them first. The most recently seen LIMIT names
 * per environment, none unseen for MAX_AGE: anyone holding the SDK key (it sits in browsers) can
 * send names, so junk is pushed out by what real requests carry rather than kept for good.
 * Cheap on the hot path: a map lookup per attribute name, no clock read (the writers' timers move
 * `clock`); a name not known yet, or not queued for REFRESH_SECONDS, is queued, and writers store
 * the queue in the background, once a second, trimming the table to the same LIMIT and MAX_AGE.
 *
 * Module state, not a service: `answerFor` (evaluate.answers.ts) takes only what the hot path
 * needs, and environment ids are UUIDs, so one map serves every app of the process. Each app's
 * writer keeps its own queue and stores only names of environments its database has.
 */
import { BUILT_IN_ATTRIBUTES } from '@guidon/engine';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import { nowIso } from '../../db/values.js';
import { isStorable } from '../../http/well-formed.js';
import { LogThrottle } from '../../log-throttle.js';

/** Names kept per environment, in memory and in the table. */
export const ATTRIBUTE_NAMES_LIMIT = 200;
/** A name not seen for this long is forgotten (not offered, then deleted). */
export const ATTRIBUTE_MAX_AGE_SECONDS = 30 * 24 * 3600;
/** A known name is queued again (its last_seen_at moves) at most this often. */
const REFRESH_SECONDS = 3600;
/** Queued names per writer at most: beyond, new names wait for a later request. */
const QUEUE_LIMIT = 10_000;

const BUILT_IN = new Set<string>(BUILT_IN_ATTRIBUTES);
/** OFREP's two fields that are not custom attributes (docs/targeting.md). */
const OFREP_OWN = new Set(['targetingKey', 'email']);

/** Per environment id: each known name → the second (of `clock`) it was last queued, least recently queued first. */
const seen = new Map<string, Map<string, number>>();
const writers = new Set<AttributeWriter>();
/** Seconds, moved by the writers' timers: the hot path reads no clock. */
let clock = Math.floor(Date.now() / 1000);

/** Notes the names of an evaluate request's custom attributes (a name whose value is null counts as absent). */
export function noteAttributes(environmentId: string, attributes: Readonly<Record<string, unknown>> | null | undefined): void {
  if (attributes == null || writers.size === 0) return;
  note(environmentId, attributes, undefined);
}

/** Notes the custom attributes of an OFREP context: every field but targetingKey and email. */
export function noteOfrepAttributes(environmentId: string | undefined, context: Readonly<Record<string, unknown>> | null | undefined): void {
  if (environmentId === undefined || context == null || writers.size === 0) return;
  note(environmentId, context, OFREP_OWN);
}

function note(environmentId: string, attributes: Readonly<Record<string, unknown>>, skip: ReadonlySet<string> | undefined): void {
  let names = seen.get(environmentId);
  if (names === undefined) seen.set(environmentId, (names = new Map()));
  for (const name in attributes) {
    const at = names.get(name);
    if (at !== undefined && clock - at < REFRESH_SECONDS) continue;
    if (at === undefined && (attributes[name] == null || BUILT_IN.has(name) || skip?.has(name) || !isStorable(name))) continue;
    let queued = false;
    for (const writer of writers) queued = writer.queue(environmentId, name) || queued;
    if (!queued) continue;
    // Most recently queued last: re-inserted when seen again; when full, the least recent goes.
    if (at !== undefined) names.delete(name);
    else if (names.size >= ATTRIBUTE_NAMES_LIMIT) names.delete(names.keys().next().value!);
    names.set(name, clock);
  }
}

/** Forgets, in memory, the names not queued for MAX_AGE (from the front: least recently queued first). */
function forgetOld(): void {
  for (const [environmentId, names] of seen) {
    for (const [name, at] of names) {
      if (clock - at < ATTRIBUTE_MAX_AGE_SECONDS) break;
      names.delete(name);
    }
    if (names.size === 0) seen.delete(environmentId);
  }
}

/** The oldest last_seen_at still offered, as ISO 8601. */
export const oldestOffered = (): string => new Date(Date.now() - ATTRIBUTE_MAX_AGE_SECONDS * 1000).toISOString();

/** Stores one app's queued names, once a second: upserts into environment_attributes, then keeps the LIMIT most recent names per environment, none older than MAX_AGE. */
export class AttributeWriter {
  /** Per environment id, names and when they were seen. */
  private pending = new Map<string, Map<string, string>>();
  private size = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private readonly failureLog = new LogThrottle();

  constructor(
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
    private readonly intervalMs = 1000,
  ) {}

  start(): void {
    writers.add(this);
    this.timer = setInterval(() => {
      const now = Math.floor(Date.now() / 1000);
      if (now !== clock) {
        clock = now;
        forgetOld();
      }
      void this.flush();
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Stops taking names and stores what is queued. */
  async close(): Promise<void> {
    writers.delete(this);
    clearInterval(this.timer);
    await this.flushing;
    await this.flush();
  }

  /** False when the queue is full (the name is then not counted as known, and a later request queues it). */
  queue(environmentId: string, name: string): boolean {
    if (this.size >= QUEUE_LIMIT) return false;
    let names = this.pending.get(environmentId);
    if (names === undefined) this.pending.set(environmentId, (names = new Map()));
    if (!names.has(name)) this.size++;
    names.set(name, nowIso());
    return true;
  }

  flush(): Promise<void> {
    if (this.flushing !== undefined || this.pending.size === 0) return this.flushing ?? Promise.resolve();
    const batch = this.pending;
    this.pending = new Map();
    this.size = 0;
    this.flushing = this.store(batch)
      .then(() => {
        if (this.failureLog.recovered()) this.log.info('attribute names are stored again');
      })
      .catch((error: unknown) => {
        // Names only help the editor: a batch lost while the database is away is not worth a retry loop.
        for (const [environmentId, names] of batch) for (const name of names.keys()) seen.get(environmentId)?.delete(name);
        if (this.failureLog.due()) this.log.warn({ err: error }, 'could not store the attribute names seen; they will be queued again when next seen');
      })
      .finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async store(batch: Map<string, Map<string, string>>): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      // Environments deleted meanwhile (or of another app's database) are skipped.
      const existing = await trx.selectFrom('environments').select('id').where('id', 'in', [...batch.keys()]).execute();
      if (existing.length === 0) return;
      const ids = existing.map((row) => row.id);
      const oldest = oldestOffered();
      for (const environmentId of ids) {
        // The most recent LIMIT of the batch (nowIso is strictly increasing: no ties).
        const names = [...batch.get(environmentId)!].sort(([, a], [, b]) => (a < b ? 1 : -1)).slice(0, ATTRIBUTE_NAMES_LIMIT);
        await trx
          .insertInto('environment_attributes')
          .values(names.map(([name, at]) => ({ environment_id: environmentId, name, first_seen_at: at, last_seen_at: at })))
          // Known already (or stored by another instance meanwhile): seen again.
          .onConflict((conflict) => conflict.columns(['environment_id', 'name']).doUpdateSet((eb) => ({ last_seen_at: eb.ref('excluded.last_seen_at') })))
          .execute();
        // Pushed out by newer names, or not seen for MAX_AGE.
        await trx
          .deleteFrom('environment_attributes')
          .where('environment_id', '=', environmentId)
          .where((eb) =>
            eb.or([
              eb('last_seen_at', '<', oldest),
              eb(
                'name',
                'not in',
                eb.selectFrom('environment_attributes').select('name').where('environment_id', '=', environmentId).orderBy('last_seen_at', 'desc').orderBy('name').limit(ATTRIBUTE_NAMES_LIMIT),
              ),
            ]),
          )
          .execute();
      }
    });
  }
}

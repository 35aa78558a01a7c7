/** Messages between the evaluate thread (HistoryRecorder) and the history worker. */

export interface BatchEnvironment {
  environmentId: string;
  snapshotId: string;
  flagIds: readonly string[];
  flagKeys: readonly string[];
  /**
   * Per flag, its variant keys (null: a flag without variants); null when no flag has any. When
   * set, each request's bytes are the flags' codes, then one variant index per flag (255: none).
   */
  flagVariants?: readonly (readonly string[] | null)[] | null | undefined;
  /** Per flag, its prerequisites' keys (null: none); null when no flag has any (docs/prerequisites.md). */
  flagPrerequisites?: readonly (readonly string[] | null)[] | null | undefined;
}

/** Bytes a request of this environment takes in a batch's codes. */
export const bytesPerRequest = (environment: BatchEnvironment): number => environment.flagIds.length * (environment.flagVariants == null ? 1 : 2);

/**
 * A second or so of evaluations, packed: per evaluate request its environment (index into
 * `environments`), time and user id, and per evaluated flag one byte, its outcome code (packages/engine/src/outcomes.ts).
 */
export interface Batch {
  /** Names the batch in the worker's answer (its counts are kept until that answer says they are stored). */
  id: number;
  environments: BatchEnvironment[];
  requestEnvironment: Uint32Array;
  requestTime: Float64Array;
  /** The user ids, UTF-8, one after another (bytes, not strings: they cross to the worker without a copy, and a second of them does not live on in the evaluate thread's heap). */
  users: Uint8Array;
  /** Per request, the length in bytes of its user id in `users`; -1: none. */
  userLengths: Int32Array;
  codes: Uint8Array;
  rows: number;
  counts: HourCounts[];
}

/** Packs user ids as a Batch holds them. */
export function packUsers(ids: readonly (string | null)[]): Pick<Batch, 'users' | 'userLengths'> {
  const users = Buffer.from(ids.filter((id) => id !== null).join(''), 'utf8');
  return { users: new Uint8Array(users), userLengths: Int32Array.from(ids, (id) => (id === null ? -1 : Buffer.byteLength(id))) };
}

/** The user id of each request of a batch, in order. */
export function* unpackUsers({ users, userLengths }: Pick<Batch, 'users' | 'userLengths'>): Generator<string | null> {
  const bytes = Buffer.from(users.buffer, users.byteOffset, users.byteLength);
  let offset = 0;
  for (const length of userLengths) {
    if (length < 0) {
      yield null;
      continue;
    }
    yield bytes.toString('utf8', offset, offset + length);
    offset += length;
  }
}

/** Evaluations per flag of one environment in one hour, including those whose rows were dropped. */
export interface HourCounts {
  environment: BatchEnvironment;
  hourStart: string;
  enabled: Uint32Array;
  disabled: Uint32Array;
  /** With flagVariants: per flag, per variant, how often it was served (flag i's variant v at variantOffsets[i] + v). */
  variants?: Uint32Array;
}

/** Where each flag's variant counts start in HourCounts.variants (-1: a flag without variants), and their total length. */
export function variantOffsets(environment: BatchEnvironment): { offsets: Int32Array; length: number } {
  const offsets = new Int32Array(environment.flagIds.length).fill(-1);
  let length = 0;
  environment.flagVariants?.forEach((keys, i) => {
    if (keys === null) return;
    offsets[i] = length;
    length += keys.length;
  });
  return { offsets, length };
}

export type ToWorker =
  | { type: 'batch'; batch: Batch }
  | { type: 'prune'; retentionDays: number }
  | { type: 'deleteHistory'; requestId: number; environmentIds: string[] }
  | { type: 'close' };

export type FromWorker =
  /** rows + discarded + failed = the batch's rows; countsStored false: the hourly counts must be handed over again. */
  | { type: 'written'; batchId: number; rows: number; discarded: number; failed: number; countsStored: boolean }
  | { type: 'log'; level: 'info' | 'warn' | 'error'; message: string; details?: Record<string, unknown> }
  | { type: 'historyDeleted'; requestId: number; error?: string }
  | { type: 'closed' };

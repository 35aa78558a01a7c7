/** Messages between the evaluate thread (HistoryRecorder) and the history worker. */

export interface BatchEnvironment {
  environmentId: string;
  snapshotId: string;
  flagIds: readonly string[];
  flagKeys: readonly string[];
}

/**
 * A second or so of evaluations, packed: per evaluate request its environment (index into
 * `environments`), time and user id, and per evaluated flag one byte, its outcome code (evaluate/outcomes.ts).
 */
export interface Batch {
  /** Names the batch in the worker's answer (its counts are kept until that answer says they are stored). */
  id: number;
  environments: BatchEnvironment[];
  requestEnvironment: Uint32Array;
  requestTime: Float64Array;
  requestUser: (string | null)[];
  codes: Uint8Array;
  rows: number;
  counts: HourCounts[];
}

/** Evaluations per flag of one environment in one hour, including those whose rows were dropped. */
export interface HourCounts {
  environment: BatchEnvironment;
  hourStart: string;
  enabled: Uint32Array;
  disabled: Uint32Array;
}

export type ToWorker =
  | { type: 'batch'; batch: Batch }
  | { type: 'prune'; retentionDays: number }
  | { type: 'deleteHistory'; requestId: number; environmentIds: string[] }
  | { type: 'close' };

export type FromWorker =
  | { type: 'ready' }
  /** rows + discarded + failed = the batch's rows; countsStored false: the hourly counts must be handed over again. */
  | { type: 'written'; batchId: number; rows: number; discarded: number; failed: number; countsStored: boolean }
  | { type: 'log'; level: 'info' | 'warn' | 'error'; message: string; details?: Record<string, unknown> }
  | { type: 'historyDeleted'; requestId: number; error?: string }
  | { type: 'closed' };

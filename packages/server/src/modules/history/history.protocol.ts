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

export type ToWorker = { type: 'batch'; batch: Batch } | { type: 'prune'; retentionDays: number } | { type: 'close' };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'written'; rows: number; discarded: number; failed: number }
  | { type: 'log'; level: 'info' | 'warn' | 'error'; message: string; details?: Record<string, unknown> }
  | { type: 'closed' };

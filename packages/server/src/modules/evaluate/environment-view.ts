import type { CompiledFlagSet } from '@guidon/engine';
import type { BatchEnvironment } from '../history/history.protocol.js';
import type { CountingBase } from '../history/history.recorder.js';

/**
 * What evaluating and answering read of a compiled environment (evaluate.cache.ts's
 * CompiledEnvironment), so that evaluation.ts and evaluate.answers.ts need not import the cache
 * that builds it from them: files here import one way.
 */
export interface EnvironmentView extends BatchEnvironment {
  /** Every flag at once, as outcome codes. */
  readonly flagSet: CompiledFlagSet;
  /** Each key as JSON text, quotes and escapes included. */
  readonly quotedKeys: readonly string[];
  /** What an answer's ETag hashes besides its outcome codes. */
  readonly keysDigest: Uint8Array;
  /** Bytes per evaluation: the codes, then one variant index per flag when any flag has variants. */
  readonly outcomeWidth: number;
  /** Per flag and variant index, `,"variant":"<key>","value":<value>`. */
  readonly variantMembers: readonly (readonly string[] | null)[];
  /** What history counts of a request no targeting rule matched (history.recorder.ts). */
  readonly countingBase: CountingBase;
  /** History's view of evaluating only the flag at `index`. */
  oneFlagView(index: number): BatchEnvironment;
}

/**
 * @guidon/openfeature/server: Guidon for @openfeature/server-sdk, remote (GuidonServerProvider)
 * or evaluating in-process (GuidonLocalProvider, server-local.ts).
 */
import { createClient, type ClientOptions, type FlagState, type GuidonClient, type GuidonContext } from '@guidon/sdk';
import type { AnswerKind } from './core.js';
import { ServerProvider } from './server-provider.js';
import { remoteAnswer, WeightSplits } from './splits.js';

export interface GuidonServerProviderOptions extends Omit<ClientOptions, 'context'> {
  /** A client of your own to build on (then the other options are not used). */
  client?: GuidonClient;
}

/**
 * Each evaluation's context is answered from the SDK's per-context cache (forContext), which the
 * change stream invalidates: one request per distinct context and change, not per evaluation.
 */
export class GuidonServerProvider extends ServerProvider<GuidonClient> {
  readonly metadata = { name: 'Guidon' } as const;

  /** Which flags' weights split (SPLIT rather than STATIC), learnt from OFREP (splits.ts). */
  private readonly splits: WeightSplits;

  constructor(options: GuidonServerProviderOptions) {
    super(options.client ?? createClient(options));
    this.splits = new WeightSplits(options, this.client);
  }

  protected async read(flagKey: string, context: GuidonContext): Promise<{ state: FlagState; answer: AnswerKind }> {
    const flags = await this.client.forContext(context);
    const state = flags.flag(flagKey);
    // The context's other flags are learnt with it: one request, then none until a flag changes.
    if (this.splits.undecided(flagKey, state)) await this.splits.learn(flags.allFlags(), context);
    return { state, answer: remoteAnswer(state, this.splits.chose(flagKey, state)) };
  }

  protected answered(): Promise<boolean> {
    return this.client.ready();
  }

  async onClose(): Promise<void> {
    await this.client.close();
  }
}

export { GuidonLocalProvider, type GuidonLocalProviderOptions } from './server-local.js';

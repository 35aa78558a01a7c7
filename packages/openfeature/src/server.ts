/**
 * @guidon/openfeature/server: Guidon for @openfeature/server-sdk, remote (GuidonServerProvider)
 * or evaluating in-process (GuidonLocalProvider, server-local.ts).
 */
import { createClient, type ClientOptions, type FlagState, type GuidonClient, type GuidonContext } from '@guidon/sdk';
import type { AnswerKind } from './core.js';
import { ServerProvider } from './server-provider.js';

export interface GuidonServerProviderOptions extends Omit<ClientOptions, 'context'> {
  /** A client of your own to build on (then the other options are not used). */
  client?: GuidonClient;
}

/**
 * Each evaluation's context is answered from the SDK's per-context cache (forContext), which the
 * change stream invalidates: one request per distinct context and change, not per evaluation.
 * The answer carries each flag's kind and unmet prerequisite (the remote client asks for them).
 */
export class GuidonServerProvider extends ServerProvider<GuidonClient> {
  readonly metadata = { name: 'Guidon' } as const;

  constructor(options: GuidonServerProviderOptions) {
    super(options.client ?? createClient(options));
  }

  protected async read(flagKey: string, context: GuidonContext): Promise<{ state: FlagState; answer: AnswerKind }> {
    const state = (await this.client.forContext(context)).flag(flagKey);
    return { state, answer: { kind: state.kind, prerequisite: state.prerequisite } };
  }

  protected answered(): Promise<boolean> {
    return this.client.ready();
  }

  async onClose(): Promise<void> {
    await this.client.close();
  }
}

export { GuidonLocalProvider, type GuidonLocalProviderOptions } from './server-local.js';

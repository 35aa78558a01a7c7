/**
 * The OpenFeature server provider in local mode (docs/local-evaluation.md): answers from
 * @guidon/sdk's local client, which holds the environment's ruleset and evaluates in-process.
 * Synchronous underneath, so an evaluation costs microseconds and no request; the client counts
 * usage for the metrics.
 */
import { createClient, type FlagState, type GuidonContext, type LocalClient, type LocalClientOptions } from '@guidon/sdk';
import type { AnswerKind } from './core.js';
import { ServerProvider } from './server-provider.js';

export interface GuidonLocalProviderOptions extends Omit<LocalClientOptions, 'mode'> {
  /** A local client of your own to build on (then the other options are not used). */
  client?: LocalClient;
}

export class GuidonLocalProvider extends ServerProvider<LocalClient> {
  readonly metadata = { name: 'Guidon (local evaluation)' } as const;

  constructor(options: GuidonLocalProviderOptions) {
    super(options.client ?? createClient({ ...options, mode: 'local' }));
  }

  /** The kind and the unmet prerequisite as the engine answers them (SPLIT where the weights chose), not read from the reason. */
  protected read(flagKey: string, context: GuidonContext): { state: FlagState; answer: AnswerKind } {
    const { state, kind, prerequisite } = this.client.evaluate(context).resolution(flagKey);
    return { state, answer: { kind, prerequisite } };
  }

  protected answered(): Promise<boolean> {
    return this.client.ready();
  }

  async onClose(): Promise<void> {
    await this.client.close();
  }
}

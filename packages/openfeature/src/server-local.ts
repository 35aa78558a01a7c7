/**
 * The OpenFeature server provider in local mode (docs/local-evaluation.md): answers from
 * @guidon/sdk's local client, which holds the environment's ruleset and evaluates in-process.
 * Synchronous underneath, so an evaluation costs microseconds and no request; the client counts
 * usage for the metrics.
 */
import { createClient, type FlagState, type GuidonContext, type LocalClient, type LocalClientOptions, type RulesetDocument } from '@guidon/sdk';
import { weightsChoose } from './core.js';
import { ServerProvider } from './server-provider.js';

export interface GuidonLocalProviderOptions extends Omit<LocalClientOptions, 'mode'> {
  /** A local client of your own to build on (then the other options are not used). */
  client?: LocalClient;
}

export class GuidonLocalProvider extends ServerProvider<LocalClient> {
  readonly metadata = { name: 'Guidon (local evaluation)' } as const;
  /** The flags of the ruleset held whose weights choose among several variants (made once per ruleset). */
  private splits: { ruleset: RulesetDocument | undefined; keys: ReadonlySet<string> } = { ruleset: undefined, keys: new Set() };

  constructor(options: GuidonLocalProviderOptions) {
    super(options.client ?? createClient({ ...options, mode: 'local' }));
  }

  protected read(flagKey: string, context: GuidonContext): { state: FlagState; weightsChose: boolean } {
    const ruleset = this.client.ruleset();
    if (this.splits.ruleset !== ruleset) this.splits = { ruleset, keys: new Set((ruleset?.flags ?? []).filter(weightsChoose).map((flag) => flag.key)) };
    return { state: this.client.evaluate(context).flag(flagKey), weightsChose: this.splits.keys.has(flagKey) };
  }

  protected answered(): Promise<boolean> {
    return this.client.ready();
  }

  async onClose(): Promise<void> {
    await this.client.close();
  }
}

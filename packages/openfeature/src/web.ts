/**
 * @guidon/openfeature/web: Guidon for @openfeature/web-sdk, one user at a time (the static
 * context), answered synchronously from the SDK's remote client, which streams changes and keeps
 * the last answer in localStorage.
 */
import { FlagNotFoundError, GeneralError, OpenFeatureEventEmitter, ProviderEvents, StandardResolutionReasons, TypeMismatchError, type EvaluationContext, type JsonValue, type Provider, type ResolutionDetails } from '@openfeature/web-sdk';
import { createClient, type ClientOptions, type GuidonClient } from '@guidon/sdk';
import { toGuidonContext } from './context.js';
import { ProviderCore } from './core.js';

export interface GuidonWebProviderOptions extends Omit<ClientOptions, 'context'> {
  /** A client of your own to build on (then the other options are not used). */
  client?: GuidonClient;
}

export class GuidonWebProvider implements Provider {
  readonly runsOn = 'client' as const;
  readonly metadata = { name: 'Guidon' } as const;
  readonly events = new OpenFeatureEventEmitter();
  readonly client: GuidonClient;
  private readonly core: ProviderCore;

  constructor(options: GuidonWebProviderOptions) {
    this.client = options.client ?? createClient(options);
    this.core = new ProviderCore(this.client, { ProviderEvents, StandardResolutionReasons, FlagNotFoundError, GeneralError, TypeMismatchError }, this.events);
  }

  async initialize(context?: EvaluationContext): Promise<void> {
    await this.core.ensureReady(this.client.identify(toGuidonContext(context)));
  }

  async onContextChange(_old: EvaluationContext, context: EvaluationContext): Promise<void> {
    await this.core.ensureReady(this.client.identify(toGuidonContext(context)));
  }

  async onClose(): Promise<void> {
    this.client.close();
  }

  resolveBooleanEvaluation(flagKey: string, defaultValue: boolean): ResolutionDetails<boolean> {
    return this.core.resolve(flagKey, 'boolean', this.client.flag(flagKey), defaultValue);
  }

  resolveStringEvaluation(flagKey: string, defaultValue: string): ResolutionDetails<string> {
    return this.core.resolve(flagKey, 'string', this.client.flag(flagKey), defaultValue);
  }

  resolveNumberEvaluation(flagKey: string, defaultValue: number): ResolutionDetails<number> {
    return this.core.resolve(flagKey, 'number', this.client.flag(flagKey), defaultValue);
  }

  resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T): ResolutionDetails<T> {
    return this.core.resolve(flagKey, 'object', this.client.flag(flagKey), defaultValue);
  }
}

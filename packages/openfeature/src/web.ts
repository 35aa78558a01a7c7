/**
 * @guidon/openfeature/web: Guidon for @openfeature/web-sdk, one user at a time (the static
 * context), answered synchronously from the SDK's remote client, which streams changes and keeps
 * the last answer in localStorage.
 */
import { FlagNotFoundError, GeneralError, OpenFeatureEventEmitter, ProviderEvents, StandardResolutionReasons, TypeMismatchError, type EvaluationContext, type JsonValue, type Provider, type ResolutionDetails, type TrackingEventDetails } from '@openfeature/web-sdk';
import { createClient, type ClientOptions, type GuidonClient, type GuidonContext } from '@guidon/sdk';
import { toGuidonContext } from './context.js';
import { ProviderCore, type FlagType } from './core.js';
import { remoteAnswer, WeightSplits } from './splits.js';

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
  /** Which flags' weights split (SPLIT rather than STATIC), learnt from OFREP (splits.ts) for the static context. */
  private readonly splits: WeightSplits;
  private context: GuidonContext = {};

  constructor(options: GuidonWebProviderOptions) {
    this.client = options.client ?? createClient(options);
    this.core = new ProviderCore(this.client, { ProviderEvents, StandardResolutionReasons, FlagNotFoundError, GeneralError, TypeMismatchError }, this.events);
    this.splits = new WeightSplits(options, this.client);
    // A changed flag is asked about again (meanwhile it answers STATIC).
    this.client.on('change', () => void this.splits.learn(this.client.allFlags(), this.context));
  }

  async initialize(context?: EvaluationContext): Promise<void> {
    await this.identify(context);
  }

  async onContextChange(_old: EvaluationContext, context: EvaluationContext): Promise<void> {
    await this.identify(context);
  }

  private async identify(context: EvaluationContext | undefined): Promise<void> {
    this.context = toGuidonContext(context);
    await this.core.ensureReady(this.client.identify(this.context));
    await this.splits.learn(this.client.allFlags(), this.context);
  }

  private resolve<T>(flagKey: string, type: FlagType, defaultValue: T): ResolutionDetails<T> {
    const state = this.client.flag(flagKey);
    return this.core.resolve(flagKey, type, state, defaultValue, remoteAnswer(state, this.splits.chose(flagKey, state)));
  }

  async onClose(): Promise<void> {
    await this.client.close();
  }

  /** OpenFeature's tracking (the specification's Tracking section): an event of the static context's unit for Guidon's experiments, with the details' `value`. Never throws. */
  track(trackingEventName: string, context: EvaluationContext, trackingEventDetails?: TrackingEventDetails): void {
    this.client.track(trackingEventName, toGuidonContext(context), { value: trackingEventDetails?.value });
  }

  resolveBooleanEvaluation(flagKey: string, defaultValue: boolean): ResolutionDetails<boolean> {
    return this.resolve(flagKey, 'boolean', defaultValue);
  }

  resolveStringEvaluation(flagKey: string, defaultValue: string): ResolutionDetails<string> {
    return this.resolve(flagKey, 'string', defaultValue);
  }

  resolveNumberEvaluation(flagKey: string, defaultValue: number): ResolutionDetails<number> {
    return this.resolve(flagKey, 'number', defaultValue);
  }

  resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T): ResolutionDetails<T> {
    return this.resolve(flagKey, 'object', defaultValue);
  }
}

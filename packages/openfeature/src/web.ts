/**
 * @guidon/openfeature/web: Guidon for @openfeature/web-sdk, one user at a time (the static
 * context), answered synchronously from the SDK's remote client, which streams changes and keeps
 * the last answer in localStorage.
 */
import { FlagNotFoundError, GeneralError, OpenFeatureEventEmitter, ProviderEvents, StandardResolutionReasons, TypeMismatchError, type EvaluationContext, type JsonValue, type Provider, type ResolutionDetails, type TrackingEventDetails } from '@openfeature/web-sdk';
import { createClient, type ClientOptions, type GuidonClient } from '@guidon/sdk';
import { toGuidonContext } from './context.js';
import { ProviderCore, type FlagType } from './core.js';

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
    await this.identify(context);
  }

  async onContextChange(_old: EvaluationContext, context: EvaluationContext): Promise<void> {
    await this.identify(context);
  }

  private async identify(context: EvaluationContext | undefined): Promise<void> {
    await this.core.ensureReady(this.client.identify(toGuidonContext(context)));
  }

  private resolve<T>(flagKey: string, type: FlagType, defaultValue: T): ResolutionDetails<T> {
    const state = this.client.flag(flagKey);
    // The answer carries the flag's kind and unmet prerequisite (the remote client asks for them).
    return this.core.resolve(flagKey, type, state, defaultValue, { kind: state.kind, prerequisite: state.prerequisite });
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

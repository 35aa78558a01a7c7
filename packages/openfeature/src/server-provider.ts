/**
 * What Guidon's two providers for @openfeature/server-sdk share: the context passed with each
 * evaluation, the typed getters over the core, and the events. They differ in how they read a
 * flag: the remote one from the SDK's per-context cache, the local one by evaluating in-process.
 */
import { FlagNotFoundError, GeneralError, OpenFeatureEventEmitter, ProviderEvents, StandardResolutionReasons, TypeMismatchError, type EvaluationContext, type JsonValue, type Provider, type ResolutionDetails, type TrackingEventDetails } from '@openfeature/server-sdk';
import type { FlagState, GuidonContext } from '@guidon/sdk';
import { toGuidonContext } from './context.js';
import { ProviderCore, type AnswerKind, type FlagType, type ProviderClient } from './core.js';

const KIT = { ProviderEvents, StandardResolutionReasons, FlagNotFoundError, GeneralError, TypeMismatchError };

export abstract class ServerProvider<Client extends ProviderClient> implements Provider {
  readonly runsOn = 'server' as const;
  abstract readonly metadata: { readonly name: string };
  readonly events = new OpenFeatureEventEmitter();
  protected readonly core: ProviderCore;

  constructor(readonly client: Client) {
    this.core = new ProviderCore(client, KIT, this.events);
  }

  /** The flag as the client answers it for this context, and its kind. */
  protected abstract read(flagKey: string, context: GuidonContext): Promise<{ state: FlagState; answer: AnswerKind }> | { state: FlagState; answer: AnswerKind };

  /** Whether the client holds flags from Guidon once its first fetch is done. */
  protected abstract answered(): Promise<boolean>;

  async initialize(): Promise<void> {
    await this.core.ensureReady(this.answered());
  }

  async resolveBooleanEvaluation(flagKey: string, defaultValue: boolean, context: EvaluationContext): Promise<ResolutionDetails<boolean>> {
    return this.resolve(flagKey, 'boolean', defaultValue, context);
  }

  async resolveStringEvaluation(flagKey: string, defaultValue: string, context: EvaluationContext): Promise<ResolutionDetails<string>> {
    return this.resolve(flagKey, 'string', defaultValue, context);
  }

  async resolveNumberEvaluation(flagKey: string, defaultValue: number, context: EvaluationContext): Promise<ResolutionDetails<number>> {
    return this.resolve(flagKey, 'number', defaultValue, context);
  }

  async resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T, context: EvaluationContext): Promise<ResolutionDetails<T>> {
    return this.resolve(flagKey, 'object', defaultValue, context);
  }

  /**
   * OpenFeature's tracking (the specification's Tracking section): an event of the context's unit (targetingKey, else email) for
   * Guidon's experiments, with the details' `value`; sent in batches by the client. Never throws.
   */
  track(trackingEventName: string, context: EvaluationContext, trackingEventDetails?: TrackingEventDetails): void {
    this.client.track(trackingEventName, toGuidonContext(context), { value: trackingEventDetails?.value });
  }

  private async resolve<T>(flagKey: string, type: FlagType, defaultValue: T, context: EvaluationContext): Promise<ResolutionDetails<T>> {
    const { state, answer } = await this.read(flagKey, toGuidonContext(context));
    return this.core.resolve(flagKey, type, state, defaultValue, answer);
  }
}

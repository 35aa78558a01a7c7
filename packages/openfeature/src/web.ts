import {
  FlagNotFoundError,
  GeneralError,
  OpenFeatureEventEmitter,
  ProviderEvents,
  StandardResolutionReasons,
  TypeMismatchError,
  type EvaluationContext,
  type JsonValue,
  type Provider,
  type ResolutionDetails,
} from '@openfeature/web-sdk';
import { flagState, GuidonProviderBase, toGuidonContext, type GuidonProviderOptions } from './shared.js';

export type GuidonWebProviderOptions = GuidonProviderOptions;

/**
 * Guidon for @openfeature/web-sdk: one user at a time (the static context), answered
 * synchronously from the SDK client, which streams changes and keeps the last answer in
 * localStorage. A flag with variants serves its variant's value (contract §15); a flag without is
 * boolean, and other types answer TYPE_MISMATCH.
 */
export class GuidonWebProvider extends GuidonProviderBase implements Provider {
  readonly runsOn = 'client' as const;
  readonly events: OpenFeatureEventEmitter;

  constructor(options: GuidonWebProviderOptions) {
    const events = new OpenFeatureEventEmitter();
    super(options, { ProviderEvents, StandardResolutionReasons, FlagNotFoundError, GeneralError, TypeMismatchError }, events);
    this.events = events;
  }

  async initialize(context?: EvaluationContext): Promise<void> {
    await this.core.ensureReady(this.client.identify(toGuidonContext(context)));
  }

  async onContextChange(_old: EvaluationContext, context: EvaluationContext): Promise<void> {
    await this.core.ensureReady(this.client.identify(toGuidonContext(context)));
  }

  resolveBooleanEvaluation(flagKey: string, defaultValue: boolean): ResolutionDetails<boolean> {
    return this.core.resolve(flagKey, 'boolean', flagState(this.client, flagKey), defaultValue);
  }

  resolveStringEvaluation(flagKey: string, defaultValue: string): ResolutionDetails<string> {
    return this.core.resolve(flagKey, 'string', flagState(this.client, flagKey), defaultValue);
  }

  resolveNumberEvaluation(flagKey: string, defaultValue: number): ResolutionDetails<number> {
    return this.core.resolve(flagKey, 'number', flagState(this.client, flagKey), defaultValue);
  }

  resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T): ResolutionDetails<T> {
    return this.core.resolve(flagKey, 'object', flagState(this.client, flagKey), defaultValue);
  }
}

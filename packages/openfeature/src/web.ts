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
import { GuidonProviderBase, toGuidonContext, type GuidonProviderOptions } from './shared.js';

export type GuidonWebProviderOptions = GuidonProviderOptions;

/**
 * Guidon for @openfeature/web-sdk: one user at a time (the static context), answered
 * synchronously from the SDK client, which streams changes and keeps the last answer in
 * localStorage. Guidon's flags are boolean; other types answer TYPE_MISMATCH.
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

  resolveBooleanEvaluation(flagKey: string): ResolutionDetails<boolean> {
    return this.core.boolean(flagKey, this.client.isEnabled(flagKey), this.client.reason(flagKey));
  }

  resolveStringEvaluation(): ResolutionDetails<string> {
    return this.core.mismatch();
  }

  resolveNumberEvaluation(): ResolutionDetails<number> {
    return this.core.mismatch();
  }

  resolveObjectEvaluation<T extends JsonValue>(): ResolutionDetails<T> {
    return this.core.mismatch();
  }
}

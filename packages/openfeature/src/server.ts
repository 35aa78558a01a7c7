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
} from '@openfeature/server-sdk';
import { flagState, GuidonProviderBase, toGuidonContext, type FlagType, type GuidonProviderOptions } from './shared.js';

export type GuidonServerProviderOptions = GuidonProviderOptions;

/**
 * Guidon for @openfeature/server-sdk. Each evaluation's context is answered from the SDK's
 * per-context cache (forContext), which the change stream invalidates: one request per distinct
 * context and change, not per evaluation. A flag with variants serves its variant's value
 * (contract §15); a flag without is boolean, and other types answer TYPE_MISMATCH.
 */
export class GuidonServerProvider extends GuidonProviderBase implements Provider {
  readonly runsOn = 'server' as const;
  readonly events: OpenFeatureEventEmitter;

  constructor(options: GuidonServerProviderOptions) {
    const events = new OpenFeatureEventEmitter();
    super(options, { ProviderEvents, StandardResolutionReasons, FlagNotFoundError, GeneralError, TypeMismatchError }, events);
    this.events = events;
  }

  async initialize(): Promise<void> {
    await this.core.ensureReady(this.client.ready());
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

  private async resolve<T>(flagKey: string, type: FlagType, defaultValue: T, context: EvaluationContext): Promise<ResolutionDetails<T>> {
    const flags = await this.client.forContext(toGuidonContext(context));
    return this.core.resolve(flagKey, type, flagState(flags, flagKey), defaultValue);
  }
}
export { GuidonLocalProvider, type GuidonLocalProviderOptions } from './server-local.js';

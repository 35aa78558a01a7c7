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
import { GuidonProviderBase, toGuidonContext, type GuidonProviderOptions } from './shared.js';

export type GuidonServerProviderOptions = GuidonProviderOptions;

/**
 * Guidon for @openfeature/server-sdk. Each evaluation's context is answered from the SDK's
 * per-context cache (forContext), which the change stream invalidates: one request per distinct
 * context and change, not per evaluation. Guidon's flags are boolean; other types answer TYPE_MISMATCH.
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

  async resolveBooleanEvaluation(flagKey: string, _defaultValue: boolean, context: EvaluationContext): Promise<ResolutionDetails<boolean>> {
    const flags = await this.client.forContext(toGuidonContext(context));
    return this.core.boolean(flagKey, flags.isEnabled(flagKey), flags.reason(flagKey));
  }

  async resolveStringEvaluation(): Promise<ResolutionDetails<string>> {
    return this.core.mismatch();
  }

  async resolveNumberEvaluation(): Promise<ResolutionDetails<number>> {
    return this.core.mismatch();
  }

  async resolveObjectEvaluation<T extends JsonValue>(): Promise<ResolutionDetails<T>> {
    return this.core.mismatch();
  }
}
export { GuidonLocalProvider, type GuidonLocalProviderOptions } from './server-local.js';

import { createClient, type ClientOptions, type GuidonClient } from '@guidon/sdk';
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
import { resolve, toGuidonContext } from './shared.js';

export interface GuidonServerProviderOptions extends Omit<ClientOptions, 'context'> {
  /** A client of your own to build on (then the other options are not used). */
  client?: GuidonClient;
}

/**
 * Guidon for @openfeature/server-sdk. Each evaluation's context is answered from the SDK's
 * per-context cache (forContext), which the change stream invalidates: one request per distinct
 * context and change, not per evaluation. Guidon's flags are boolean; other types answer TYPE_MISMATCH.
 */
export class GuidonServerProvider implements Provider {
  readonly metadata = { name: 'Guidon' } as const;
  readonly runsOn = 'server' as const;
  readonly events = new OpenFeatureEventEmitter();
  readonly client: GuidonClient;
  private stale = false;

  constructor(options: GuidonServerProviderOptions) {
    this.client = options.client ?? createClient(options);
    this.client.on('ready', () => {
      this.stale = false;
      this.events.emit(ProviderEvents.Ready);
    });
    this.client.on('stale', () => {
      this.stale = true;
      this.events.emit(ProviderEvents.Stale);
    });
    this.client.on('error', (error) => this.events.emit(ProviderEvents.Error, { message: error.message }));
    this.client.on('change', ({ keys }) => this.events.emit(ProviderEvents.ConfigurationChanged, { flagsChanged: keys }));
  }

  async initialize(): Promise<void> {
    if (!(await this.client.ready())) throw new GeneralError('Guidon did not answer');
  }

  async onClose(): Promise<void> {
    this.client.close();
  }

  async resolveBooleanEvaluation(flagKey: string, _defaultValue: boolean, context: EvaluationContext): Promise<ResolutionDetails<boolean>> {
    const flags = await this.client.forContext(toGuidonContext(context));
    const resolution = resolve(flags.isEnabled(flagKey), flags.reason(flagKey));
    switch (resolution.kind) {
      case 'evaluated':
        return {
          value: resolution.value,
          variant: resolution.value ? 'on' : 'off',
          reason: this.stale ? StandardResolutionReasons.STALE : resolution.reason,
          flagMetadata: { reason: resolution.guidonReason },
        };
      case 'bootstrap':
        return { value: resolution.value, reason: StandardResolutionReasons.DEFAULT };
      case 'not-found':
        throw new FlagNotFoundError(`Flag "${flagKey}" not found`);
      default:
        throw new GeneralError('Guidon did not answer');
    }
  }

  async resolveStringEvaluation(): Promise<ResolutionDetails<string>> {
    throw new TypeMismatchError('Guidon flags are boolean');
  }

  async resolveNumberEvaluation(): Promise<ResolutionDetails<number>> {
    throw new TypeMismatchError('Guidon flags are boolean');
  }

  async resolveObjectEvaluation<T extends JsonValue>(): Promise<ResolutionDetails<T>> {
    throw new TypeMismatchError('Guidon flags are boolean');
  }
}

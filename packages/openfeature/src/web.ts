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
} from '@openfeature/web-sdk';
import { resolve, toGuidonContext } from './shared.js';

export interface GuidonWebProviderOptions extends Omit<ClientOptions, 'context'> {
  /** A client of your own to build on (then the other options are not used). */
  client?: GuidonClient;
}

/**
 * Guidon for @openfeature/web-sdk: one user at a time (the static context), answered
 * synchronously from the SDK client, which streams changes and keeps the last answer in
 * localStorage. Guidon's flags are boolean; other types answer TYPE_MISMATCH.
 */
export class GuidonWebProvider implements Provider {
  readonly metadata = { name: 'Guidon' } as const;
  readonly runsOn = 'client' as const;
  readonly events = new OpenFeatureEventEmitter();
  readonly client: GuidonClient;
  private stale = false;

  constructor(options: GuidonWebProviderOptions) {
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

  async initialize(context?: EvaluationContext): Promise<void> {
    const ok = await this.client.identify(toGuidonContext(context));
    if (!ok) throw new GeneralError('Guidon did not answer');
  }

  async onContextChange(_old: EvaluationContext, context: EvaluationContext): Promise<void> {
    if (!(await this.client.identify(toGuidonContext(context)))) throw new GeneralError('Guidon did not answer');
  }

  async onClose(): Promise<void> {
    this.client.close();
  }

  resolveBooleanEvaluation(flagKey: string): ResolutionDetails<boolean> {
    const resolution = resolve(this.client.isEnabled(flagKey), this.client.reason(flagKey));
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

  resolveStringEvaluation(): ResolutionDetails<string> {
    throw new TypeMismatchError('Guidon flags are boolean');
  }

  resolveNumberEvaluation(): ResolutionDetails<number> {
    throw new TypeMismatchError('Guidon flags are boolean');
  }

  resolveObjectEvaluation<T extends JsonValue>(): ResolutionDetails<T> {
    throw new TypeMismatchError('Guidon flags are boolean');
  }
}

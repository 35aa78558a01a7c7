/**
 * The one resolution core of Guidon's providers (docs/adr/0008-sdk-shape.md): the remote server
 * provider, the local one and the web provider read a flag from their SDK client (`flag(key)`)
 * and this turns it into OpenFeature's resolution details, and the client's events into the
 * provider's. OpenFeature's classes come from the SDK each provider is built for
 * (@openfeature/server-sdk or web-sdk, both optional peers), so they are passed in.
 */
import { REASON_BOOTSTRAP, REASON_FALLBACK, REASON_NO_RULESET, REASON_NOT_FOUND, REASON_UNKNOWN_FLAG, type FlagState, type GuidonContext, type GuidonError } from '@guidon/sdk';

/** The parts of an OpenFeature SDK a provider answers with (both SDKs have the same). */
export interface OpenFeatureKit {
  ProviderEvents: { Ready: string; Stale: string; Error: string; ConfigurationChanged: string };
  StandardResolutionReasons: { STALE: string; DEFAULT: string };
  FlagNotFoundError: new (message: string) => Error;
  GeneralError: new (message: string) => Error;
  TypeMismatchError: new (message: string) => Error;
}

/** The OpenFeature flag types: a flag's value must be of the type asked for. */
export type FlagType = 'boolean' | 'string' | 'number' | 'object';

/**
 * What a provider knows of a flag's answer besides its state, from the engine (the local
 * provider) or in Guidon's answer (the remote ones: the SDK's FlagState.kind): OpenFeature's reason
 * (undefined: UNKNOWN) and the unmet prerequisite's key. The core never reads them from the
 * reason's text.
 */
export interface AnswerKind {
  kind: string | undefined;
  prerequisite?: string | undefined;
}

/** Resolution details, as both SDKs type them. */
export interface Details<T> {
  value: T;
  variant?: string;
  reason: string;
  flagMetadata?: { reason: string; prerequisite?: string };
}

/** What the core needs of a client, remote or local: its events, and track() for the providers' own. */
export interface ProviderClient {
  on<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): () => void;
  track(name: string, context: GuidonContext, details?: { value?: number }): void;
}

interface ClientEvents {
  ready: () => void;
  stale: () => void;
  error: (error: GuidonError) => void;
  change: (change: { keys: string[] }) => void;
}

interface Emitter {
  emit(event: never, details?: never): void;
}

/** Whether a value is of an OpenFeature flag type (object: any JSON object or array, as the SDKs' own check has it). */
function isOfType(value: unknown, type: FlagType): boolean {
  return type === 'object' ? typeof value === 'object' && value !== null : typeof value === type;
}

const describe = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value);

/** A provider's state and its answers: the client's events become the provider's, a flag's answer resolution details. */
export class ProviderCore {
  /** Set between the client's stale and its next ready (its data may be out of date). */
  private stale = false;

  constructor(
    client: ProviderClient,
    private readonly kit: OpenFeatureKit,
    events: Emitter,
  ) {
    const emit = (event: string, details?: object) => events.emit(event as never, details as never);
    client.on('ready', () => {
      this.stale = false;
      emit(kit.ProviderEvents.Ready);
    });
    client.on('stale', () => {
      this.stale = true;
      emit(kit.ProviderEvents.Stale);
    });
    // Exposures and events not sent say nothing of the flags: the provider stays ready (eventStats() counts them).
    client.on('error', (error) => error.kind !== 'events' && emit(kit.ProviderEvents.Error, { message: error.message }));
    client.on('change', ({ keys }) => emit(kit.ProviderEvents.ConfigurationChanged, { flagsChanged: keys }));
  }

  /**
   * The details of a flag for an evaluation of `type` (docs/variants.md, "What an OpenFeature app
   * sees"), from what the client read for it. A flag with variants answers its variant's value
   * and key, a flag without is boolean (on/off); a value of another type is TYPE_MISMATCH. A
   * bootstrap value (booleans only) answers DEFAULT, and a typed evaluation the caller's default.
   * Throws the SDK's error where there is no value to give (OpenFeature's way for a provider).
   */
  resolve<T>(flagKey: string, type: FlagType, state: FlagState, defaultValue: T, answer: AnswerKind): Details<T> {
    const { enabled, reason } = state;
    switch (reason) {
      case REASON_NOT_FOUND:
      case REASON_UNKNOWN_FLAG:
        throw new this.kit.FlagNotFoundError(`Flag "${flagKey}" not found`);
      case REASON_FALLBACK:
      case REASON_NO_RULESET:
        throw new this.kit.GeneralError('Guidon did not answer');
      case REASON_BOOTSTRAP:
        return { value: (type === 'boolean' ? enabled : defaultValue) as T, reason: this.kit.StandardResolutionReasons.DEFAULT };
    }
    const variant = typeof state.variant === 'string' ? state.variant : undefined;
    const value = variant === undefined ? enabled : state.value;
    if (!isOfType(value, type)) throw new this.kit.TypeMismatchError(`Flag "${flagKey}" serves ${variant === undefined ? 'a boolean' : describe(value)}, not ${type}`);
    // OFREP's metadata: the unmet prerequisite's key beside the reason that names it (docs/prerequisites.md).
    const { kind, prerequisite } = answer;
    const flagMetadata = prerequisite === undefined ? { reason } : { reason, prerequisite };
    return { value: value as T, variant: variant ?? (enabled ? 'on' : 'off'), reason: this.stale ? this.kit.StandardResolutionReasons.STALE : (kind ?? 'UNKNOWN'), flagMetadata };
  }

  /** Throws the SDK's error unless the client holds flags from Guidon. */
  async ensureReady(answered: Promise<boolean>): Promise<void> {
    if (!(await answered)) throw new this.kit.GeneralError('Guidon did not answer');
  }
}

/**
 * What the server and web providers share: the context mapping, the event wiring and the
 * resolution details. OpenFeature's classes come from the SDK each provider is built for
 * (@openfeature/server-sdk or web-sdk, both optional peers), so they are passed in.
 */
import { reasonKind } from '@guidon/engine';
import { createClient, REASON_BOOTSTRAP, REASON_FALLBACK, REASON_NOT_FOUND, type ClientOptions, type FlagSet, type FlagState, type GuidonClient, type GuidonContext, type JsonValue } from '@guidon/sdk';

/** OpenFeature's evaluation context, as much of it as Guidon reads. */
export interface OpenFeatureContext {
  targetingKey?: string;
  email?: unknown;
  [attribute: string]: unknown;
}

/** What a custom attribute may be (contract §14): the server refuses a whole request for one that is not. */
const MAX_ATTRIBUTES = 100;
const MAX_NAME = 64;
const MAX_TEXT = 1024;

/**
 * Contract §12 and §14: targetingKey is Guidon's user_id, email its user_email, and every other
 * field a custom attribute. A Date is sent as ISO 8601; a field the server would refuse (an
 * object, a list, text over 1,024 characters, a name over 64) is left out rather than failing
 * the evaluation, and so are fields past the 100th.
 */
export function toGuidonContext(context: OpenFeatureContext | undefined): GuidonContext {
  const custom: Record<string, string | number | boolean | null> = {};
  let count = 0;
  for (const [name, value] of Object.entries(context ?? {})) {
    if (name === 'targetingKey' || name === 'email' || name.length === 0 || name.length > MAX_NAME || count >= MAX_ATTRIBUTES) continue;
    const sent = value instanceof Date ? value.toISOString() : value;
    if (sent === null || typeof sent === 'boolean' || (typeof sent === 'number' && Number.isFinite(sent)) || (typeof sent === 'string' && [...sent].length <= MAX_TEXT)) {
      custom[name] = sent;
      count++;
    }
  }
  return {
    user_id: typeof context?.targetingKey === 'string' ? context.targetingKey : null,
    user_email: typeof context?.email === 'string' ? context.email : null,
    ...(count > 0 ? { custom_attributes: custom } : {}),
  };
}

/** The parts of an OpenFeature SDK a provider answers with (both SDKs have the same). */
export interface OpenFeatureKit {
  ProviderEvents: { Ready: string; Stale: string; Error: string; ConfigurationChanged: string };
  StandardResolutionReasons: { STALE: string; DEFAULT: string };
  FlagNotFoundError: new (message: string) => Error;
  GeneralError: new (message: string) => Error;
  TypeMismatchError: new (message: string) => Error;
}

interface Emitter {
  emit(event: never, details?: never): void;
}

/** The resolution details of a boolean flag, as both SDKs type them. */
export interface BooleanDetails {
  value: boolean;
  variant?: string;
  reason: string;
  flagMetadata?: { reason: string };
}

/** The resolution details of a flag with variants, as both SDKs type them. */
export interface ValueDetails<T> {
  value: T;
  variant?: string;
  reason: string;
  flagMetadata?: { reason: string };
}

/** The OpenFeature flag types: a variant's value must be of the type asked for. */
export type FlagType = 'boolean' | 'string' | 'number' | 'object';

/**
 * A flag as a client (or a forContext set) reads it: enabled and reason with the SDK's fallbacks,
 * and for a flag with variants its variant and value (the only case that copies the set).
 */
export function flagState(flags: Pick<FlagSet, 'isEnabled' | 'reason' | 'getVariant' | 'allFlags'>, key: string): FlagState {
  const state: FlagState = { enabled: flags.isEnabled(key), reason: flags.reason(key) };
  const variant = flags.getVariant(key);
  if (variant !== undefined) Object.assign(state, { variant, value: flags.allFlags()[key]?.value });
  return state;
}

/** Whether a variant's value is of an OpenFeature flag type (object: any JSON object or array, as the SDKs' own check has it). */
function isOfType(value: unknown, type: FlagType): boolean {
  return type === 'object' ? typeof value === 'object' && value !== null : typeof value === type;
}

/**
 * A provider's state and its answers, the same for both SDKs: the client's events become the
 * provider's, and a Guidon answer becomes resolution details (or the SDK's error).
 */
export class ProviderCore {
  /** Set while the client's flags may be out of date (its stream is down). */
  private stale = false;

  constructor(
    readonly client: GuidonClient,
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
    client.on('error', (error) => emit(kit.ProviderEvents.Error, { message: error.message }));
    client.on('change', ({ keys }) => emit(kit.ProviderEvents.ConfigurationChanged, { flagsChanged: keys }));
  }

  /** The details of a boolean flag from what the client read for it; throws the SDK's error when there is no value to give. */
  boolean(flagKey: string, enabled: boolean, reason: string): BooleanDetails {
    if (reason === REASON_BOOTSTRAP) return { value: enabled, reason: this.kit.StandardResolutionReasons.DEFAULT };
    if (reason === REASON_NOT_FOUND) throw new this.kit.FlagNotFoundError(`Flag "${flagKey}" not found`);
    if (reason === REASON_FALLBACK) throw new this.kit.GeneralError('Guidon did not answer');
    return {
      value: enabled,
      variant: enabled ? 'on' : 'off',
      // Contract §12: the outcome table names the OpenFeature reason of each of Guidon's.
      reason: this.stale ? this.kit.StandardResolutionReasons.STALE : (reasonKind(reason) ?? 'UNKNOWN'),
      flagMetadata: { reason },
    };
  }

  /**
   * The details of any flag for an evaluation of `type` (contract §15). A flag with variants
   * answers its variant's value and key (TYPE_MISMATCH when the value is of another type); a flag
   * without variants is boolean: `enabled` with on/off for a boolean evaluation, TYPE_MISMATCH for
   * any other. Throws the SDK's error when there is no value to give.
   */
  resolve<T>(flagKey: string, type: FlagType, state: FlagState, defaultValue: T): ValueDetails<T> {
    const { enabled, reason } = state;
    if (!('variant' in state) || typeof state.variant !== 'string') {
      if (type === 'boolean') return this.boolean(flagKey, enabled, reason) as ValueDetails<unknown> as ValueDetails<T>;
      // A bootstrap gives booleans only: a typed evaluation gets the caller's default, as OFREP's providers give before an answer.
      if (reason === REASON_BOOTSTRAP) return { value: defaultValue, reason: this.kit.StandardResolutionReasons.DEFAULT };
      this.boolean(flagKey, enabled, reason); // FLAG_NOT_FOUND or Guidon away: the same errors as a boolean evaluation
      throw new this.kit.TypeMismatchError(`Flag "${flagKey}" is boolean, not ${type}`);
    }
    const value = state.value as JsonValue | undefined;
    if (!isOfType(value, type)) throw new this.kit.TypeMismatchError(`Flag "${flagKey}" serves ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}, not ${type}`);
    return {
      value: value as T,
      variant: state.variant,
      reason: this.stale ? this.kit.StandardResolutionReasons.STALE : (reasonKind(reason) ?? 'UNKNOWN'),
      flagMetadata: { reason },
    };
  }

  /** Throws the SDK's error unless the client holds flags from Guidon. */
  async ensureReady(answered: Promise<boolean>): Promise<void> {
    if (!(await answered)) throw new this.kit.GeneralError('Guidon did not answer');
  }
}

export interface GuidonProviderOptions extends Omit<ClientOptions, 'context'> {
  /** A client of your own to build on (then the other options are not used). */
  client?: GuidonClient;
}

/** What both providers are besides their resolvers: a name, a Guidon client, its events, and closing. */
export abstract class GuidonProviderBase {
  readonly metadata = { name: 'Guidon' } as const;
  readonly client: GuidonClient;
  protected readonly core: ProviderCore;

  constructor(options: GuidonProviderOptions, kit: OpenFeatureKit, events: Emitter) {
    this.client = options.client ?? createClient(options);
    this.core = new ProviderCore(this.client, kit, events);
  }

  async onClose(): Promise<void> {
    this.client.close();
  }
}

/**
 * The OpenFeature server provider in local mode (contract §16): answers from @guidon/sdk's local
 * client, which holds the environment's ruleset and evaluates in-process. Synchronous underneath,
 * so an evaluation costs microseconds and no request; the client counts usage for the metrics.
 */
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
import { reasonKind } from '@guidon/engine';
import { createClient, REASON_NO_RULESET, REASON_UNKNOWN_FLAG, type LocalClient, type LocalClientOptions, type LocalFlagSet } from '@guidon/sdk';
import { toGuidonContext } from './shared.js';

export interface GuidonLocalProviderOptions extends Omit<LocalClientOptions, 'mode'> {
  /** A local client of your own to build on (then the other options are not used). */
  client?: LocalClient;
}

type Kind = 'boolean' | 'string' | 'number' | 'object';

export class GuidonLocalProvider implements Provider {
  readonly runsOn = 'server' as const;
  readonly metadata = { name: 'Guidon (local evaluation)' } as const;
  readonly events = new OpenFeatureEventEmitter();
  readonly client: LocalClient;
  private stale = false;

  constructor(options: GuidonLocalProviderOptions) {
    this.client = options.client ?? createClient({ ...options, mode: 'local' });
    this.client.on('ready', () => {
      this.stale = false;
      this.events.emit(ProviderEvents.Ready);
    });
    this.client.on('stale', () => {
      this.stale = true;
      this.events.emit(ProviderEvents.Stale);
    });
    this.client.on('error', (error) => this.events.emit(ProviderEvents.Error, { message: error.message }));
    this.client.on('change', () => {
      this.stale = false;
      this.events.emit(ProviderEvents.ConfigurationChanged);
    });
  }

  async initialize(): Promise<void> {
    if (!(await this.client.ready())) throw new GeneralError('Guidon did not answer and there is no bootstrap ruleset');
  }

  async onClose(): Promise<void> {
    await this.client.close();
  }

  async resolveBooleanEvaluation(flagKey: string, _defaultValue: boolean, context: EvaluationContext): Promise<ResolutionDetails<boolean>> {
    return this.resolve(flagKey, context, 'boolean');
  }

  async resolveStringEvaluation(flagKey: string, _defaultValue: string, context: EvaluationContext): Promise<ResolutionDetails<string>> {
    return this.resolve(flagKey, context, 'string');
  }

  async resolveNumberEvaluation(flagKey: string, _defaultValue: number, context: EvaluationContext): Promise<ResolutionDetails<number>> {
    return this.resolve(flagKey, context, 'number');
  }

  async resolveObjectEvaluation<T extends JsonValue>(flagKey: string, _defaultValue: T, context: EvaluationContext): Promise<ResolutionDetails<T>> {
    return this.resolve(flagKey, context, 'object');
  }

  /**
   * Contract §15's OFREP mapping: a flag without variants is boolean (value true/false, variant
   * on/off); a flag with variants gives its variant's value and key; any other type asked for is
   * TYPE_MISMATCH.
   */
  private resolve<T>(flagKey: string, context: EvaluationContext, kind: Kind): ResolutionDetails<T> {
    const flags: LocalFlagSet = this.client.evaluate(toGuidonContext(context));
    const reason = flags.reason(flagKey);
    if (reason === REASON_UNKNOWN_FLAG) throw new FlagNotFoundError(`Flag "${flagKey}" not found`);
    if (reason === REASON_NO_RULESET) throw new GeneralError('Guidon did not answer: no ruleset held');
    const enabled = flags.isEnabled(flagKey);
    const variant = flags.variant(flagKey);
    const variants = this.variantsOf(flagKey);
    const value: unknown = variant === undefined ? enabled : variants?.values.get(variant);
    const actual: Kind = typeof value === 'boolean' ? 'boolean' : typeof value === 'string' ? 'string' : typeof value === 'number' ? 'number' : 'object';
    if (actual !== kind) throw new TypeMismatchError(`Flag "${flagKey}" serves a ${actual}, not a ${kind}`);
    let kindOfReason: string = reasonKind(reason) ?? StandardResolutionReasons.UNKNOWN;
    // Contract §15: on for everyone, the weights chose among several variants: SPLIT, as OFREP answers.
    if (kindOfReason === 'STATIC' && variant !== undefined && variants?.splitByWeight) kindOfReason = StandardResolutionReasons.SPLIT;
    return {
      value: value as T,
      variant: variant ?? (enabled ? 'on' : 'off'),
      reason: this.stale ? StandardResolutionReasons.STALE : kindOfReason,
      flagMetadata: { reason },
    };
  }

  /**
   * Per flag with variants of the ruleset held: each variant's value by key (the flag set's
   * value() answers only values of the type asked for; here the type is checked against the
   * value), and whether the weights share among several variants. Made once per ruleset.
   */
  private variantsByFlag: { ruleset: unknown; flags: Map<string, FlagVariants> } | undefined;

  private variantsOf(flagKey: string): FlagVariants | undefined {
    const ruleset = this.client.ruleset();
    let held = this.variantsByFlag;
    if (!held || held.ruleset !== ruleset) {
      const flags = new Map<string, FlagVariants>();
      for (const flag of ruleset?.flags ?? []) {
        const variants = flag.variants ?? [];
        if (variants.length > 0) flags.set(flag.key, { values: new Map(variants.map((v) => [v.key, v.value])), splitByWeight: variants.filter((v) => v.weight > 0).length > 1 });
      }
      this.variantsByFlag = held = { ruleset, flags };
    }
    return held.flags.get(flagKey);
  }
}

interface FlagVariants {
  readonly values: ReadonlyMap<string, unknown>;
  readonly splitByWeight: boolean;
}

/** The SDK's vocabulary, shared by the remote and the local client. Types only. */
import type { ReasonKind } from '@guidon/engine';

/** Any JSON value, as a variant may serve. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * What getValue answers for a default of type T: the default's JSON type, widened
 * (a default of 'blue' gives string, of 3 a number, of false a boolean, of an object that object's type).
 */
export type ValueOf<T> = T extends string ? string : T extends number ? number : T extends boolean ? boolean : T;

/** Who a flag is evaluated for (Guidon's evaluate context). */
export interface GuidonContext {
  user_id?: string | null;
  user_email?: string | null;
  /** Attributes that conditions can name (docs/targeting.md): at most 100, names 1–64 characters, values up to 1,024 characters. */
  custom_attributes?: Record<string, string | number | boolean | null> | null;
}

/** One flag's answer, as the `flags` member of POST /sdk/v1/evaluate gives it. */
export interface FlagState {
  enabled: boolean;
  /** Guidon's reason, e.g. "Matched user_id targeting rule"; one of the REASON_* constants for an answer Guidon did not give. */
  reason: string;
  /** Only for a flag with variants (docs/variants.md): the key of the variant served. */
  variant?: string;
  /** Only for a flag with variants: the variant's value (any JSON). */
  value?: JsonValue;
  /**
   * The reason's kind, as OpenFeature names it (SPLIT where the weights chose between variants):
   * in the remote client's answers, which ask Guidon for it (`X-Guidon-Answer: kind`, docs/api.md).
   * Absent from a fallback, a bootstrap and the local client's allFlags().
   */
  kind?: ReasonKind;
  /** With kind PREREQUISITE_FAILED: the key of the first prerequisite not met. */
  prerequisite?: string;
}

export type Flags = Record<string, FlagState>;

import type { IncomingHttpHeaders } from 'node:http';
import { CONDITION_LIMITS } from '@guidon/engine';
import { Type } from 'typebox';

const OptionalText = Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()]));

/**
 * A custom attribute's number: finite. JSON has no Infinity, but JSON.parse reads 1e400 as one,
 * which no condition can compare and no SDK can serialize back.
 */
export const AttributeNumber = Type.Number({ minimum: -Number.MAX_VALUE, maximum: Number.MAX_VALUE, description: 'a finite number' });

/** docs/targeting.md: at most 100 attributes, names of 1–64 characters, values a string, a number or a boolean (null: absent). */
export const CustomAttributes = Type.Union([
  Type.Record(Type.String(), Type.Union([Type.String({ maxLength: CONDITION_LIMITS.customAttributeLength }), AttributeNumber, Type.Boolean(), Type.Null()]), {
    maxProperties: CONDITION_LIMITS.customAttributes,
    propertyNames: { minLength: 1, maxLength: CONDITION_LIMITS.attributeNameLength },
    description: 'attributes that conditions can name (docs/targeting.md)',
  }),
  Type.Null(),
]);

/** Who a flag is evaluated for: evaluate's `context`, and a change stream's X-Guidon-Context. */
export const EvaluateContext = Type.Object({
  user_id: OptionalText,
  user_email: OptionalText,
  custom_attributes: Type.Optional(CustomAttributes),
});

export const EvaluateBody = Type.Object({
  environment: Type.String({ minLength: 1, maxLength: 64, description: 'environment key: production, staging, or a custom key' }),
  context: Type.Optional(EvaluateContext),
});

/** OpenFeature's name of a reason (the engine's ReasonKind): evaluate's `kind` and OFREP's `reason`. */
export const ReasonKind = Type.Union([Type.Literal('DISABLED'), Type.Literal('TARGETING_MATCH'), Type.Literal('SPLIT'), Type.Literal('STATIC'), Type.Literal('DEFAULT'), Type.Literal('PREREQUISITE_FAILED')]);

export const EvaluateResult = Type.Object({
  flags: Type.Record(
    Type.String(),
    Type.Object({
      enabled: Type.Boolean(),
      reason: Type.String(),
      variant: Type.Optional(Type.String({ description: 'only for a flag with variants (docs/variants.md): the variant served' })),
      value: Type.Optional(Type.Unknown({ description: "only for a flag with variants: the variant's value" })),
      kind: Type.Optional({ ...ReasonKind, description: "only with `X-Guidon-Answer: kind`: the reason's kind, as OpenFeature names it (SPLIT where the weights chose between variants)" }),
      prerequisite: Type.Optional(Type.String({ description: 'only with `X-Guidon-Answer: kind` and kind PREREQUISITE_FAILED: the key of the first prerequisite not met' })),
    }),
  ),
});

/** `X-Guidon-Answer: kind` adds each flag's kind to the answer (docs/api.md); any other value, or none, leaves the answer as it is. */
export const AnswerHeaders = Type.Object({
  'x-guidon-answer': Type.Optional(Type.String({ description: '`kind`: each flag\'s answer also carries `kind` (and `prerequisite`): what Guidon\'s remote SDK asks for' })),
});
export const wantsKinds = (headers: IncomingHttpHeaders): boolean => headers['x-guidon-answer'] === 'kind';

export const NotModified = Type.Null({ description: 'Not modified: the answer is the one the If-None-Match ETag names (no body)' });

import { Type } from 'typebox';

const OptionalText = Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()]));

export const EvaluateBody = Type.Object({
  environment: Type.String({ minLength: 1, maxLength: 64, description: 'environment key: production, staging, or a custom key' }),
  context: Type.Optional(
    Type.Object({
      user_id: OptionalText,
      user_email: OptionalText,
      custom_attributes: Type.Optional(Type.Unknown({ description: 'reserved for future use' })),
    }),
  ),
});

export const EvaluateResult = Type.Object({
  flags: Type.Record(Type.String(), Type.Object({ enabled: Type.Boolean(), reason: Type.String() })),
});

export const NotModified = Type.Null({ description: 'Not modified: the answer is the one the If-None-Match ETag names (no body)' });

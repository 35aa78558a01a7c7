import { Type } from 'typebox';
import { Uuid } from '../../http/schemas.js';
import { EvaluateBody } from '../evaluate/evaluate.schemas.js';

/** The context exactly as evaluate takes it (docs/api.md, docs/targeting.md): same checks, same 400s. */
export const ExplainBody = Type.Object({ context: EvaluateBody.properties.context });

const ExplainedRule = Type.Object({
  id: Uuid,
  position: Type.Integer({ minimum: 1, description: 'in evaluation order among all of the flag\'s rules, from 1 (as the rules editor numbers them)' }),
  priority: Type.Integer(),
  rule_type: Type.Union([Type.Literal('user_id'), Type.Literal('user_email'), Type.Literal('email_domain'), Type.Literal('conditions')]),
  rule_value: Type.Union([Type.String(), Type.Null()]),
  conditions: Type.Union([Type.Array(Type.Ref('Condition')), Type.Null()]),
  rollout_percentage: Type.Integer({ minimum: 0, maximum: 100 }),
  serve: Type.Boolean(),
});

export const ExplainResult = Type.Object({
  flags: Type.Record(
    Type.String(),
    Type.Object({
      enabled: Type.Boolean(),
      reason: Type.String(),
      rule: Type.Union([ExplainedRule, Type.Null()], { description: 'the rule that served the context; null when none did (the flag is off, a rollout or everyone else served)' }),
      prerequisite: Type.Union([Type.String(), Type.Null()], { description: 'the key of the first prerequisite not met (the flag is off for it), or null (docs/prerequisites.md)' }),
    }),
  ),
});

import { Type } from 'typebox';
import { Description, Name, Timestamp, Uuid } from '../../http/schemas.js';

const FlagKey = Type.String({ pattern: '^[a-z][a-z0-9_-]*$', maxLength: 100, description: 'a-z, 0-9, _ and -; starts with a letter; unique per environment' });
const RolloutPercentage = Type.Integer({ minimum: 0, maximum: 100 });

export const Flag = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    environment_id: Uuid,
    name: Type.String(),
    key: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    enabled: Type.Boolean(),
    rollout_percentage: Type.Integer(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Flag' },
);

export const CreateFlagBody = Type.Object({
  name: Name,
  key: FlagKey,
  description: Type.Optional(Description),
  enabled: Type.Optional(Type.Boolean()),
  rollout_percentage: Type.Optional(RolloutPercentage),
});

export const UpdateFlagBody = Type.Object({
  name: Type.Optional(Name),
  key: Type.Optional(FlagKey),
  description: Type.Optional(Description),
  enabled: Type.Optional(Type.Boolean()),
  rollout_percentage: Type.Optional(RolloutPercentage),
});

export const FlagParams = Type.Object({ project_id: Uuid, env_id: Uuid, flag_id: Uuid });

const RuleType = Type.Union([Type.Literal('user_id'), Type.Literal('user_email'), Type.Literal('email_domain')]);
const Priority = Type.Integer({ minimum: -1_000_000, maximum: 1_000_000, description: 'higher is evaluated first' });

export const Rule = Type.Object(
  {
    id: Uuid,
    flag_id: Uuid,
    rule_type: RuleType,
    rule_value: Type.String(),
    enabled: Type.Boolean(),
    priority: Type.Integer(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Rule' },
);

export const CreateRuleBody = Type.Object({
  rule_type: RuleType,
  rule_value: Type.String({ maxLength: 400 }),
  enabled: Type.Optional(Type.Boolean()),
  priority: Type.Optional(Priority),
});

export const UpdateRuleBody = Type.Object({
  rule_type: Type.Optional(RuleType),
  rule_value: Type.Optional(Type.String({ maxLength: 400 })),
  enabled: Type.Optional(Type.Boolean()),
  priority: Type.Optional(Priority),
});

export const RuleParams = Type.Object({ project_id: Uuid, env_id: Uuid, flag_id: Uuid, rule_id: Uuid });

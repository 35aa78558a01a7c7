import { Type } from 'typebox';
import { Uuid } from '../../http/schemas.js';

const Email = Type.String({ minLength: 3, maxLength: 320 });
/** argon2 does not need the limit; it keeps a megabyte password from being hashed. */
const NewPassword = Type.String({ minLength: 8, maxLength: 1024 });

export const RegisterBody = Type.Object({
  email: Email,
  password: NewPassword,
  invitation_token: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'the secret of an invitation link (<PUBLIC_URL>/register?invitation=…): proves the address, and is required while sign-up is closed' })),
});
export const RegisteredUser = Type.Object({ id: Uuid, email: Type.String() });

export const LoginBody = Type.Object({ email: Type.String({ maxLength: 320 }), password: Type.String({ maxLength: 1024 }) });
export const LoginResult = Type.Object({ token: Type.String({ description: 'JWT, valid 24 hours' }) });

export const ForgotPasswordBody = Type.Object({ email: Type.String({ maxLength: 320 }) });
export const MessageResult = Type.Object({ message: Type.String() });

export const ResetPasswordBody = Type.Object({ token: Type.String({ maxLength: 512 }), newPassword: NewPassword });

export const VerifyEmailBody = Type.Object({ token: Type.String({ maxLength: 512, description: 'from the emailed link <PUBLIC_URL>/verify-email?token=…' }) });

export const CurrentUser = Type.Object({
  user_id: Uuid,
  email: Type.String(),
  email_verified: Type.Boolean({ description: 'false until the address is proven (the emailed link, an invitation, a password reset, an OpenID sign-in)' }),
});

export const SignInMethods = Type.Object({
  methods: Type.Array(Type.Union([Type.Literal('password'), Type.Literal('oidc')]), {
    description: 'how this account can sign in: password (it has one), oidc (linked to an account at the OpenID provider)',
  }),
});

export const SignInOptions = Type.Object({
  password: Type.Boolean({ description: 'false: password login, registration and reset are turned off (PASSWORD_LOGIN=false)' }),
  oidc: Type.Union([Type.Object({ name: Type.String({ description: 'the button says "Sign in with <name>"' }), login_url: Type.String() }), Type.Null()], {
    description: 'sign-in with the OpenID provider, when configured',
  }),
});

/**
 * Where a person may be sent back to after signing in: a path of this origin, "/" then neither "/"
 * nor a backslash (browsers read both as naming another host), no white space. The dashboard reads this same pattern
 * from the API document (its generated fields.ts), so the two checks cannot drift apart.
 */
export const RETURN_PATH = { pattern: '^/(?![/\\\\])\\S*$', maxLength: 2048 } as const;
export const ReturnPath = Type.String({
  $id: 'ReturnPath',
  ...RETURN_PATH,
  description: 'a path of this site to return to after signing in ("/" then neither "/" nor a backslash); anything else means "/"',
});

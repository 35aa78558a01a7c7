import { hash, verify } from '@node-rs/argon2';

// Algorithm.Argon2id (a const enum in the typings, which isolated modules cannot read).
const ARGON2ID = 2;

/** Password hashes computed by this process (argon2id: the most expensive thing the service does; /metrics). */
export const passwordWork = { hashes: 0 };

export function hashPassword(password: string): Promise<string> {
  passwordWork.hashes++;
  return hash(password, { algorithm: ARGON2ID });
}

let dummyHash: Promise<string> | undefined;

/**
 * Verifies against a throwaway hash when the account does not exist, so login takes the same
 * time either way and does not reveal which emails are registered (nor which have no password).
 */
export async function verifyPassword(passwordHash: string | undefined, password: string): Promise<boolean> {
  // '' : an account made by OpenID sign-in, which has no password (oidc.repository.ts).
  if (passwordHash === undefined || passwordHash === '') {
    dummyHash ??= hashPassword('guidon-timing-equaliser');
    await verify(await dummyHash, password);
    return false;
  }
  return verify(passwordHash, password);
}

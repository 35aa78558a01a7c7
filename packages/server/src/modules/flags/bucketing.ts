import { Invalid } from '../../errors.js';

/**
 * Whether evaluation hashes a flag's bucketing_key instead of its key. Until the engine's rollout
 * and variant stages take it, a bucketing key would be kept and change no one's bucket, so it is
 * refused rather than stored for nothing (docs/flags-as-code.md, "Bucketing key").
 */
export const BUCKETING_KEY_EVALUATED = false;

/** A flag's bucketing_key as it may be stored (null: the key), or Invalid. */
export function checkBucketingKey<T extends string | null | undefined>(value: T): T {
  if (value !== null && value !== undefined && !BUCKETING_KEY_EVALUATED) throw new Invalid('bucketing_key: this server does not hash bucketing keys yet, so it would change no bucket; send null');
  return value;
}

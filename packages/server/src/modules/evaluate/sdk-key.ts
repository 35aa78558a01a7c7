/** Names an SDK key without holding it (stream tokens are readable, and travel in URLs). */
import { createHash } from 'node:crypto';

export const sdkKeyHash = (sdkKey: string): string => createHash('sha256').update(sdkKey).digest('base64url').slice(0, 22);

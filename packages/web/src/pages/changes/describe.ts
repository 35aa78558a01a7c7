import type { FlagChange, RequestedChange } from '../../api/client';
import { dateTime } from '../../components/time';

/** What a PUT of a flag does, in words: "switch on, rollout 25%". */
export function describeFlagChange(set: FlagChange): string {
  const parts: string[] = [];
  if (set.enabled !== undefined) parts.push(set.enabled ? 'switch on' : 'switch off');
  if (set.rollout_percentage !== undefined) parts.push(`rollout ${set.rollout_percentage}%`);
  if (set.everyone_else !== undefined) parts.push(set.everyone_else === 'off' ? 'everyone else off' : 'everyone else by the rollout');
  if (set.name !== undefined) parts.push(`name "${set.name}"`);
  if (set.key !== undefined) parts.push(`key ${set.key}`);
  if (set.description !== undefined) parts.push(set.description === null ? 'no description' : 'new description');
  if (set.variants !== undefined) parts.push(set.variants.length === 0 ? 'no variants' : `variants ${set.variants.map((variant) => `${variant.key} ${variant.weight / 10}%`).join(', ')}`);
  if (set.off_variant !== undefined && set.variants === undefined) parts.push(`off variant ${set.off_variant ?? 'none'}`);
  return parts.join(', ') || 'no change';
}

/** One change of a request, in words, about `subject` (its flag's key). */
export function describeChange(change: RequestedChange, subject: string): string {
  switch (change.op) {
    case 'flag.create':
      return `Create flag ${change.flag.key}`;
    case 'flag.update':
      return `${subject}: ${describeFlagChange(change.set)}`;
    case 'flag.toggle':
      return `${subject}: switch it over`;
    case 'flag.delete':
      return `Delete flag ${subject}`;
    case 'rule.create':
      return `${subject}: add a ${change.rule.rule_type} rule${change.rule.rule_value ? ` (${change.rule.rule_value})` : ''}`;
    case 'rule.update':
      return `${subject}: change a rule (${Object.keys(change.set).join(', ')})`;
    case 'rule.delete':
      return `${subject}: delete a rule`;
    case 'schedule.create':
      return `${subject}: at ${dateTime(change.at)}, ${describeFlagChange(change.change)}`;
    case 'schedule.cancel':
      return `Cancel a scheduled change of ${subject}`;
    case 'release.create':
      return `${subject}: start a guarded release, ${(change.release.steps ?? [5, 10, 25, 50, 100]).join(' → ')} %, with ${change.release.guardrails.length === 1 ? 'one guardrail' : `${change.release.guardrails.length} guardrails`}`;
  }
}

/** The offset of this browser's time zone at that moment, as ISO 8601 wants it: +02:00. */
export function offsetOf(date: Date): string {
  const minutes = -date.getTimezoneOffset();
  const sign = minutes >= 0 ? '+' : '-';
  const abs = Math.abs(minutes);
  return `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** The browser's time zone, as people name it: "Europe/Paris, UTC+01:00" (or just "UTC"). */
export function timeZoneName(date = new Date()): string {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const offset = `UTC${offsetOf(date)}`;
  return zone === 'UTC' || zone === 'Etc/UTC' ? 'UTC' : `${zone}, ${offset}`;
}

/** A datetime-local input's value (a wall-clock time here) as an instant with this zone's offset. */
export function localToIso(local: string): string | null {
  const date = new Date(local);
  if (Number.isNaN(date.getTime())) return null;
  return date.toISOString();
}

/** An instant as a datetime-local input's value, here. */
export function isoToLocal(date: Date): string {
  const pad = (value: number) => String(value).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

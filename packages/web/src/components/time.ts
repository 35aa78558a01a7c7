const DAY = 24 * 60 * 60 * 1000;
export const STALE_AFTER_DAYS = 30;

/** A flag neither changed nor evaluated for 30 days. */
export function isStale(updatedAt: string, lastEvaluatedAt: string | null, now = Date.now()): boolean {
  const latest = Math.max(Date.parse(updatedAt), lastEvaluatedAt ? Date.parse(lastEvaluatedAt) : 0);
  return now - latest > STALE_AFTER_DAYS * DAY;
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
export function ago(iso: string | null, now = Date.now()): string {
  if (!iso) return 'never';
  const minutes = Math.round((Date.parse(iso) - now) / 60000);
  if (Math.abs(minutes) < 60) return relative.format(minutes, 'minute');
  const hours = Math.round(minutes / 60);
  if (Math.abs(hours) < 48) return relative.format(hours, 'hour');
  return relative.format(Math.round(hours / 24), 'day');
}

export const dateTime = (iso: string) => new Date(iso).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });

/** last_evaluated_at is the start of the hour of the latest evaluation (hourly precision). */
export function evaluatedAgo(hourStart: string | null, now = Date.now()): string {
  if (!hourStart) return 'never';
  if (now - Date.parse(hourStart) < 60 * 60 * 1000) return 'this hour';
  return ago(new Date(Date.parse(hourStart) + 30 * 60 * 1000).toISOString(), now);
}

export const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

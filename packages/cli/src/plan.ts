/** An import's answer as the server gives it, and as a table a person reads. */
import { visible } from './visible.js';

export interface PlanItem {
  resource: 'environment' | 'segment' | 'flag';
  key: string;
  environment: string | null;
  fields: string[];
}

export interface ImportAnswer {
  mode: 'merge' | 'replace';
  dry_run: boolean;
  import_id: string | null;
  create: PlanItem[];
  update: PlanItem[];
  delete: PlanItem[];
  unchanged: number;
  /** The environments that need approvals: their part became a change request (id), or would (null, in a dry run). Absent from older servers. */
  change_requests?: { environment: string; id: string | null }[];
  /** Unleash imports: what was left out, and why. */
  skipped?: { feature: string | null; environment: string | null; what: string; reason: string }[];
}

/** Rows padded into columns (the last one not padded); cells are measured as they will be shown. */
function table(cells: string[][]): string[] {
  const rows = cells.map((row) => row.map(visible));
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ').trimEnd());
}

/** The plan as lines, without their line breaks: the caller prints them made visible (visible.ts). */
export function planLines(answer: ImportAnswer): string[] {
  const lines: string[] = [];
  const rows = [['ACTION', 'RESOURCE', 'ENVIRONMENT', 'KEY', 'CHANGES']];
  for (const action of ['create', 'update', 'delete'] as const) {
    for (const item of answer[action]) rows.push([action, item.resource, item.environment ?? '', item.key, item.fields.join(', ')]);
  }
  const changes = rows.length - 1;
  if (changes > 0) lines.push(...table(rows), '');
  const counts = `${answer.create.length} to create, ${answer.update.length} to update, ${answer.delete.length} to delete, ${answer.unchanged} unchanged`;
  if (changes === 0) lines.push(`Nothing to do: ${answer.unchanged} unchanged.`);
  else if (answer.dry_run) lines.push(`Dry run, nothing changed: ${counts}.`);
  else lines.push(`Applied (import ${answer.import_id}): ${counts.replace(/to (create|update|delete)/g, (_, verb: string) => `${verb}d`)}.`);
  for (const request of answer.change_requests ?? []) {
    lines.push(request.id === null ? `${request.environment} needs approval: applying makes its changes a change request.` : `${request.environment} needs approval: its changes await review in change request ${request.id}.`);
  }
  if (answer.skipped && answer.skipped.length > 0) {
    lines.push('', `Skipped (${answer.skipped.length}): not imported, as it could not be mapped exactly:`);
    const skipped = [['FEATURE', 'ENVIRONMENT', 'WHAT', 'WHY']];
    for (const entry of answer.skipped) skipped.push([entry.feature ?? '', entry.environment ?? '', entry.what, entry.reason]);
    lines.push(...table(skipped));
  }
  return lines;
}

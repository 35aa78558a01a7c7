/** GET .../experiments/{id}/units.csv (docs/experiments.md): every exposed unit with its metrics' values, for analysis elsewhere. */
import { Readable } from 'node:stream';
import type { Database } from '../../db/database.js';
import type { Experiment } from './experiments.repository.js';
import type { Metric } from './metrics.repository.js';
import { MULTIPLE, readExposedUnits, readUnitValues, type UnitValues } from './results.js';

const LINES_PER_CHUNK = 5000;

/**
 * RFC 4180 quoting; a field a spreadsheet would run as a formula (=, +, -, @, tab or carriage
 * return first) is prefixed with ' (units are whatever applications sent). Numbers are written as they are.
 */
export function csvField(text: string): string {
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** A unit's value of a metric as the results count it: conversion 0/1, count, sum; `mean` gives the sum and the count. */
function valueColumns(metric: Metric, values: UnitValues, i: number, pre: boolean): string[] {
  const count = (pre ? values.preCount! : values.count)[i]!;
  const sum = (pre ? values.preSum! : values.sum)[i]!;
  switch (metric.kind) {
    case 'conversion':
      return [count > 0 ? '1' : '0'];
    case 'count':
      return [String(count)];
    case 'sum':
      return [String(sum)];
    case 'mean':
      return [String(sum), String(count)];
  }
}

export async function unitsCsv(database: Database, experiment: Experiment, metrics: Metric[]): Promise<Readable> {
  const now = Date.now();
  const units = await readExposedUnits(database, experiment, now);
  const byId = new Map(metrics.map((metric) => [metric.id, metric]));
  const used = experiment.metrics.map((link) => byId.get(link.metric_id)).filter((metric): metric is Metric => metric !== undefined);
  const values: UnitValues[] = [];
  for (const metric of used) values.push(await readUnitValues(database, experiment, metric, units, now));
  const header = ['unit', 'arm', 'first_exposure'];
  for (const metric of used) {
    const columns = metric.kind === 'mean' ? [`${metric.key}.sum`, `${metric.key}.events`] : [metric.key];
    header.push(...columns);
    if (experiment.cuped && metric.kind !== 'mean') header.push(...columns.map((column) => `${column}.pre`));
  }
  const names = [...units.index.keys()];
  function* lines(): Generator<string> {
    let chunk = header.map(csvField).join(',') + '\r\n';
    for (let i = 0; i < units.size; i++) {
      const arm = units.arm[i]!;
      const row = [csvField(names[i]!), csvField(arm === MULTIPLE ? 'multiple' : units.arms[arm]!), new Date(units.first[i]!).toISOString()];
      used.forEach((metric, m) => {
        row.push(...valueColumns(metric, values[m]!, i, false));
        if (experiment.cuped && metric.kind !== 'mean') row.push(...valueColumns(metric, values[m]!, i, true));
      });
      chunk += row.join(',') + '\r\n';
      if ((i + 1) % LINES_PER_CHUNK === 0) {
        yield chunk;
        chunk = '';
      }
    }
    if (chunk !== '') yield chunk;
  }
  return Readable.from(lines());
}

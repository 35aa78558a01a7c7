/**
 * An experiment's results (docs/experiments.md, "How results are computed"): the exposed units
 * and their arms, then per metric each unit's value from its events, added up per arm into the
 * sums statistics.ts turns into every figure. Computed on the results thread (results.worker.ts).
 * The exposed units go into a temporary table, to which the events are joined in SQL: on SQLite
 * each metric's, in ranges of ids (readUnitValuesSqlite); on PostgreSQL every metric's in one
 * query, in one transaction (readUnitValuesPostgres). units.csv and releases read each row's unit
 * (eachRow).
 */
import type BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import type { Database } from '../../db/database.js';
import type { Db } from '../../db/handle.js';
import { pacer } from '../../pace.js';
import type { Experiment } from './experiments.repository.js';
import type { Metric } from './metrics.repository.js';
import {
  compare,
  compareCuped,
  sampleRatioMismatch,
  summarize,
  summarizeRatio,
  type ArmSummary,
  type Comparison,
  type CupedSums,
  type Interval,
  type RatioSums,
  type TestOptions,
  type ValueSums,
} from './statistics.js';

const PAGE_ROWS = 2000;
const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;
/** A unit exposed to more than one arm. */
export const MULTIPLE = -1;

/** Every exposed unit, in the order of its first counted exposure: its arm (an index into `arms`, or MULTIPLE) and its first exposure. */
export interface UnitArms {
  arms: string[];
  arm: Int32Array;
  first: Float64Array;
  size: number;
}

/** The same with each unit's identifier. */
export interface ExposedUnits extends UnitArms {
  /** unit → its index in `arm` and `first` */
  index: Map<string, number>;
}

/** Per unit, one metric's events in its window (`count`, `sum`) and over the lookback before its first exposure (`preCount`, `preSum`). */
export interface UnitValues {
  count: Float64Array;
  sum: Float64Array;
  preCount: Float64Array | null;
  preSum: Float64Array | null;
}

/** The window an experiment's exposures count in: from its start to its stop, or to now while it runs. */
const spanOf = (experiment: Experiment, now: number) => ({
  start: Date.parse(experiment.started_at!),
  end: experiment.stopped_at === null ? now : Date.parse(experiment.stopped_at),
});

/** A row of a page: [id, unit, arm or value, at]. */
type PageRow = [id: number | string, unit: string, armOrValue: string | number, at: number | string];

/** Each table's key column and the column read beside the unit: one page query for both, on both databases. */
const PAGED = { exposures: { key: 'flag_key', read: 'arm' }, events: { key: 'name', read: 'value' } } as const;

const statements = new WeakMap<BetterSqlite3.Database, Record<'exposures' | 'events', BetterSqlite3.Statement>>();

/**
 * The rows of one flag's exposures or one event name's events after `afterId`, PAGE_ROWS at most,
 * in id order, each with its unit's identifier (from `units`). SQLite: the driver's statement in
 * raw mode (arrays, not objects).
 */
function readPage(database: Database, table: 'exposures' | 'events', environmentId: string, key: string, afterId: number): Promise<PageRow[]> | PageRow[] {
  const { key: keyColumn, read } = PAGED[table];
  const sqlite = database.sqlite;
  if (sqlite) {
    let prepared = statements.get(sqlite);
    if (!prepared) {
      const page = (from: 'exposures' | 'events') =>
        sqlite
          .prepare(`select r.id, u.unit, r.${PAGED[from].read}, r.at from ${from} r join units u on u.id = r.unit_id where r.environment_id = ? and r.${PAGED[from].key} = ? and r.id > ? order by r.id limit ?`)
          .raw(true);
      prepared = { exposures: page('exposures'), events: page('events') };
      statements.set(sqlite, prepared);
    }
    return prepared[table].all(environmentId, key, afterId, PAGE_ROWS) as PageRow[];
  }
  return sql<{ id: string; unit: string; x: string | number; at: string }>`select r.id, u.unit, r.${sql.ref(read)} as x, r.at from ${sql.table(table)} r join units u on u.id = r.unit_id where r.environment_id = ${environmentId} and r.${sql.ref(keyColumn)} = ${key} and r.id > ${afterId} order by r.id limit ${PAGE_ROWS}`
    .execute(database.db)
    .then(({ rows }) => rows.map((row): PageRow => [row.id, row.unit, row.x, row.at]));
}

/**
 * Visits every row of a table's key in id order, page by page, with a turn of the event loop
 * between pages: `visit([id, unit, arm or value, at])`. The results read by unit id instead
 * (readExposedUnitsSqlite, readExposedUnitsPostgres); this one serves units.csv and releases
 * (releases/analysis.ts), which need each unit's identifier.
 */
export async function eachRow(database: Database, table: 'exposures' | 'events', environmentId: string, key: string, visit: (row: PageRow) => void): Promise<void> {
  // A turn every few milliseconds: evaluate's p99 while a computation runs (docs/performance.md, "Experiments").
  const pace = pacer(3);
  let after = 0;
  for (;;) {
    const rows = await readPage(database, table, environmentId, key, after);
    for (const row of rows) visit(row);
    if (rows.length < PAGE_ROWS) return;
    after = Number(rows[rows.length - 1]![0]);
    await pace();
  }
}

export async function readExposedUnits(database: Database, experiment: Experiment, now: number): Promise<ExposedUnits> {
  const arms = Object.keys(experiment.expected_shares ?? {});
  const armIndex = new Map(arms.map((arm, i) => [arm, i]));
  const { start, end } = spanOf(experiment, now);
  const tally = new ExposureTally<string>();
  await eachRow(database, 'exposures', experiment.environment_id, experiment.flag_key, ([, unit, rowArmKey, rowAt]) => {
    const at = Number(rowAt);
    const rowArm = armIndex.get(rowArmKey as string);
    if (at < start || at > end || rowArm === undefined) return;
    tally.add(unit, rowArm, at);
  });
  return { arms, index: tally.index, arm: tally.arm, first: tally.first, size: tally.index.size };
}

/** The exposed units as their exposures are read, by identifier (text, or the SQLite reader's unit id): each unit's row, its arm (MULTIPLE once it met two) and its first exposure. */
class ExposureTally<K> {
  readonly index = new Map<K, number>();
  arm = new Int32Array(1024);
  first = new Float64Array(1024);

  add(unit: K, rowArm: number, at: number): void {
    const known = this.index.get(unit);
    if (known === undefined) {
      const i = this.index.size;
      if (i === this.arm.length) {
        this.arm = grow(this.arm);
        this.first = grow(this.first);
      }
      this.index.set(unit, i);
      this.arm[i] = rowArm;
      this.first[i] = at;
    } else {
      if (this.arm[known] !== rowArm) this.arm[known] = MULTIPLE;
      if (at < this.first[known]!) this.first[known] = at;
    }
  }
}

function grow<T extends Int32Array | Float64Array>(array: T): T {
  const bigger = new (array.constructor as new (length: number) => T)(array.length * 2);
  bigger.set(array);
  return bigger;
}

/** Zeroed per-unit values for `size` units (the pre-exposure ones with CUPED only). */
function emptyValues(experiment: Experiment, size: number): UnitValues {
  const pre = () => (experiment.cuped ? new Float64Array(size) : null);
  return { count: new Float64Array(size), sum: new Float64Array(size), preCount: pre(), preSum: pre() };
}

/**
 * One metric's events per unit: those of its name from the unit's first exposure (inclusive) to
 * `window_hours` after it, or to the end of the experiment; with CUPED, also those of the lookback
 * before the first exposure.
 */
export async function readUnitValues(database: Database, experiment: Experiment, metric: Metric, units: ExposedUnits, now: number): Promise<UnitValues> {
  const { end } = spanOf(experiment, now);
  const lookback = experiment.cuped ? experiment.cuped_lookback_days * DAY_MS : 0;
  const window = metric.window_hours === null ? Infinity : metric.window_hours * HOUR_MS;
  const values = emptyValues(experiment, units.size);
  if (units.size === 0) return values;
  const earliest = Date.parse(experiment.started_at!) - lookback;
  await eachRow(database, 'events', experiment.environment_id, metric.event, ([, unit, rowValue, rowAt]) => {
    // Times are compared here, not in the query: the page then follows the (environment, name, id) index alone.
    const at = Number(rowAt);
    if (at < earliest || at > end) return;
    const i = units.index.get(unit);
    if (i === undefined) return;
    const value = rowValue as number;
    const first = units.first[i]!;
    if (at >= first) {
      if (at - first <= window) {
        values.count[i]! += 1;
        values.sum[i]! += value;
      }
    } else if (values.preCount && at >= first - lookback) {
      values.preCount[i]! += 1;
      values.preSum![i]! += value;
    }
  });
  return values;
}

/**
 * SQLite, in the results worker (results.worker.ts: its own connection, nothing else on its
 * thread, so no turns are given): the same units and values as readExposedUnits and
 * readUnitValues, read by unit id. The exposed units go into a temporary table of the
 * connection, keyed by unit id, with their index and first exposure; each metric's events are then
 * joined to it in SQL, which checks the windows and hands back per event one integer (the unit's
 * index, or -1 − index for the CUPED lookback), plus the value for `sum` and `mean` metrics.
 * Reading ten million rows as arrays of four values was most of a computation's time
 * (docs/performance.md, "Experiments"). Rows are read in id order, so a unit's sum adds its values
 * in the same order as readUnitValues: the figures are the same to the last bit.
 */
const ID_RANGE = 4096;

function idPages(sqlite: BetterSqlite3.Database, table: 'exposures' | 'events'): number {
  return Number(sqlite.prepare(`select coalesce(max(id), 0) from ${table}`).pluck().get());
}

function readExposedUnitsSqlite(sqlite: BetterSqlite3.Database, experiment: Experiment, now: number): UnitArms {
  const arms = Object.keys(experiment.expected_shares ?? {});
  const armIndex = new Map(arms.map((arm, i) => [arm, i]));
  const { start, end } = spanOf(experiment, now);
  const tally = new ExposureTally<number>();
  const page = sqlite.prepare('select unit_id, arm, at from exposures where environment_id = ? and flag_key = ? and id >= ? and id < ? and at >= ? and at <= ? order by id').raw(true);
  const last = idPages(sqlite, 'exposures');
  for (let from = 0; from <= last; from += ID_RANGE) {
    for (const [unit, rowArmKey, rowAt] of page.all(experiment.environment_id, experiment.flag_key, from, from + ID_RANGE, start, end) as [number, string, number][]) {
      const rowArm = armIndex.get(rowArmKey);
      if (rowArm !== undefined) tally.add(unit, rowArm, rowAt);
    }
  }
  const { index, arm, first } = tally;
  sqlite.exec('create temp table if not exists exposed_units (unit_id integer primary key, row integer not null, first integer not null)');
  sqlite.exec('delete from temp.exposed_units');
  const ROWS = 1000;
  const insert = (rows: number) => sqlite.prepare(`insert into temp.exposed_units (unit_id, row, first) values ${Array(rows).fill('(?, ?, ?)').join(', ')}`);
  const full = insert(ROWS);
  const parameters: number[] = [];
  sqlite.transaction(() => {
    for (const [unit, i] of index) {
      parameters.push(unit, i, first[i]!);
      if (parameters.length === ROWS * 3) {
        full.run(parameters);
        parameters.length = 0;
      }
    }
    if (parameters.length > 0) insert(parameters.length / 3).run(parameters);
  })();
  return { arms, arm, first, size: index.size };
}

/** What the SQL readers of a metric's events ask for: the times, its window and lookback, whether values are read. */
function eventQuery(experiment: Experiment, metric: Metric, now: number) {
  const lookback = experiment.cuped ? experiment.cuped_lookback_days * DAY_MS : 0;
  return {
    end: spanOf(experiment, now).end,
    lookback,
    earliest: Date.parse(experiment.started_at!) - lookback,
    // No window: the largest window any two times can be apart (at − first ≤ it always holds, as with Infinity).
    window: metric.window_hours === null ? Number.MAX_SAFE_INTEGER : metric.window_hours * HOUR_MS,
    // conversion and count use the number of events alone (valueOf); sum and mean the values too.
    withValues: metric.kind === 'sum' || metric.kind === 'mean',
  };
}

function readUnitValuesSqlite(sqlite: BetterSqlite3.Database, experiment: Experiment, metric: Metric, units: UnitArms, now: number): UnitValues {
  const values = emptyValues(experiment, units.size);
  if (units.size === 0) return values;
  const { end, lookback, earliest, window, withValues } = eventQuery(experiment, metric, now);
  const page = sqlite.prepare(
    `select case when e.at >= x.first then x.row else -1 - x.row end${withValues ? ', e.value' : ''}
       from events e cross join temp.exposed_units x on x.unit_id = e.unit_id
      where e.environment_id = ? and e.name = ? and e.id >= ? and e.id < ? and e.at >= ? and e.at <= ?
        and ((e.at >= x.first and e.at - x.first <= ?) or (e.at < x.first and e.at >= x.first - ?))
      order by e.id`,
  );
  if (withValues) page.raw(true);
  else page.pluck(true);
  const last = idPages(sqlite, 'events');
  const { count, sum, preCount, preSum } = values;
  for (let from = 0; from <= last; from += ID_RANGE) {
    const rows = page.all(experiment.environment_id, metric.event, from, from + ID_RANGE, earliest, end, window, lookback);
    if (withValues) {
      for (const [i, value] of rows as [number, number][]) {
        if (i >= 0) {
          count[i]! += 1;
          sum[i]! += value;
        } else {
          preCount![-1 - i]! += 1;
          preSum![-1 - i]! += value;
        }
      }
    } else {
      for (const i of rows as number[]) {
        if (i >= 0) count[i]! += 1;
        else preCount![-1 - i]! += 1;
      }
    }
  }
  return values;
}

/**
 * PostgreSQL, in the computation's transaction: the exposed units found in SQL and kept in a
 * temporary table dropped at its end. Each unit's counted exposures are grouped: its arm is
 * MULTIPLE when they name two, its first exposure the earliest. Units are placed as the grouping
 * hands them over, not in the order of their first exposure as on SQLite (sorting a million took
 * most of a second): every count is the same, a sum of fractional values may differ in its last bits.
 */
async function readExposedUnitsPostgres(db: Db, experiment: Experiment, now: number): Promise<UnitArms> {
  const arms = Object.keys(experiment.expected_shares ?? {});
  const { start, end } = spanOf(experiment, now);
  await sql`create temp table exposed_units (unit_id bigint not null, row integer not null, arm integer not null, first bigint not null) on commit drop`.execute(db);
  await sql`insert into exposed_units (unit_id, row, arm, first)
    select unit_id, row_number() over () - 1, case when min(arm) = max(arm) then min(arm) else ${MULTIPLE} end, min(at)
      from (select unit_id, array_position(${arms}::text[], arm) - 1 as arm, at from exposures
             where environment_id = ${experiment.environment_id} and flag_key = ${experiment.flag_key} and at >= ${start} and at <= ${end} and arm = any(${arms}::text[])) counted
     group by unit_id`.execute(db);
  // The planner's join of the events to it needs its size.
  await sql`analyze exposed_units`.execute(db);
  const { rows } = await sql<{ row: number; arm: number; first: string }>`select row, arm, first from exposed_units`.execute(db);
  const arm = new Int32Array(rows.length);
  const first = new Float64Array(rows.length);
  for (const row of rows) {
    arm[row.row] = row.arm;
    first[row.row] = Number(row.first);
  }
  return { arms, arm, first, size: rows.length };
}

/**
 * PostgreSQL: every metric of the experiment in one pass over their events, joined in SQL to one
 * hash of the exposed units and added up per unit, in its window and (with CUPED) in the lookback
 * before its first exposure: a row a unit, not an event. A unit's values are added in the order
 * PostgreSQL meets them, not in id order as on SQLite: a sum of fractional values may differ in
 * its last bits. Reading one row an event, or a pass a metric, took about twice as long
 * (docs/performance.md, "Experiments").
 */
async function readUnitValuesPostgres(db: Db, experiment: Experiment, metrics: readonly Metric[], units: UnitArms, now: number): Promise<Map<Metric, UnitValues>> {
  const read = new Map(metrics.map((metric) => [metric, emptyValues(experiment, units.size)]));
  if (units.size === 0 || metrics.length === 0) return read;
  const queries = metrics.map((metric) => eventQuery(experiment, metric, now));
  // The span and the lookback are the experiment's: the same for every metric.
  const { end, lookback, earliest } = queries[0]!;
  const widest = Math.max(...queries.map((query) => query.window));
  const columns = metrics.flatMap((metric, m) => {
    const inWindow = sql`e.name = ${metric.event} and e.at >= x.first and e.at - x.first <= ${queries[m]!.window}`;
    // Before the first exposure, the where clause keeps only the lookback's events.
    const before = sql`e.name = ${metric.event} and e.at < x.first`;
    return [
      sql`(count(*) filter (where ${inWindow}))::integer as ${sql.ref(`n${m}`)}`,
      ...(queries[m]!.withValues ? [sql`sum(e.value) filter (where ${inWindow}) as ${sql.ref(`sum${m}`)}`] : []),
      ...(experiment.cuped ? [sql`(count(*) filter (where ${before}))::integer as ${sql.ref(`pre_n${m}`)}`, sql`sum(e.value) filter (where ${before}) as ${sql.ref(`pre_sum${m}`)}`] : []),
    ];
  });
  const { rows } = await sql<Record<string, number | null>>`
    select x.row as i, ${sql.join(columns)}
      from events e join exposed_units x on x.unit_id = e.unit_id
     where e.environment_id = ${experiment.environment_id} and e.name = any(${[...new Set(metrics.map((metric) => metric.event))]}::text[]) and e.at >= ${earliest} and e.at <= ${end}
       and ((e.at >= x.first and e.at - x.first <= ${widest}) or (e.at < x.first and e.at >= x.first - ${lookback}))
     group by x.row`.execute(db);
  metrics.forEach((metric, m) => {
    const { count, sum, preCount, preSum } = read.get(metric)!;
    for (const row of rows) {
      const i = row.i!;
      count[i] = row[`n${m}`]!;
      sum[i] = row[`sum${m}`] ?? 0;
      if (preCount) {
        preCount[i] = row[`pre_n${m}`]!;
        preSum![i] = row[`pre_sum${m}`] ?? 0;
      }
    }
  });
  return read;
}

/** A unit's value of a conversion, count or sum metric from its events' count and sum (docs/experiments.md, "Metrics"); releases/analysis.ts reads it too. */
export const valueOf = (kind: Metric['kind'], count: number, sum: number): number => (kind === 'conversion' ? (count > 0 ? 1 : 0) : kind === 'count' ? count : sum);

const moments = () => ({ sum: 0, sumSquares: 0 });

/** Per arm, the sums of one metric over the units of that arm alone. */
function armSums(kind: Metric['kind'], units: UnitArms, values: UnitValues) {
  const arms = units.arms.length;
  const ratio: RatioSums[] = Array.from({ length: arms }, () => ({ n: 0, numerator: moments(), denominator: moments(), sumOfProducts: 0 }));
  const cuped: CupedSums[] = Array.from({ length: arms }, () => ({ n: 0, post: moments(), pre: moments(), sumOfProducts: 0 }));
  for (let i = 0; i < units.size; i++) {
    const a = units.arm[i]!;
    if (a === MULTIPLE) continue;
    const count = values.count[i]!;
    const sum = values.sum[i]!;
    // `mean`: y the sum of values, d the number of events; otherwise y the unit's value, x its pre-exposure one.
    const y = kind === 'mean' ? sum : valueOf(kind, count, sum);
    const x = kind === 'mean' ? count : values.preCount ? valueOf(kind, values.preCount[i]!, values.preSum![i]!) : 0;
    const r = ratio[a]!;
    r.n++;
    r.numerator.sum += y;
    r.numerator.sumSquares += y * y;
    r.denominator.sum += x;
    r.denominator.sumSquares += x * x;
    r.sumOfProducts += x * y;
  }
  for (let a = 0; a < arms; a++) {
    const r = ratio[a]!;
    Object.assign(cuped[a]!, { n: r.n, post: r.numerator, pre: r.denominator, sumOfProducts: r.sumOfProducts });
  }
  return { ratio, cuped };
}

export interface MetricResult {
  metric_id: string;
  key: string;
  role: string;
  arms: Record<string, { units: number; mean: number; variance: number }>;
  versus_control: Record<string, { absolute: Interval; relative: Interval | null; chance_to_win: number | null; significant: boolean; cuped_applied: boolean }>;
}

export interface Results {
  computed_at: string;
  units: number;
  arms: Record<string, { units: number; expected_share: number }>;
  srm: { p_value: number; flagged: boolean };
  multiple_exposures: { units: number; share: number };
  metrics: MetricResult[];
  enough_data: boolean;
}

/** One metric's figures: the raw arms, and each other arm against the control (CUPED when asked and the kind has it). */
function metricResult(experiment: Experiment, metric: Metric, role: string, units: UnitArms, values: UnitValues): MetricResult {
  const { ratio, cuped } = armSums(metric.kind, units, values);
  const summaries: ArmSummary[] = ratio.map((sums) =>
    metric.kind === 'mean' ? summarizeRatio(sums) : summarize(metric.kind as Exclude<Metric['kind'], 'mean'>, { n: sums.n, ...sums.numerator } satisfies ValueSums),
  );
  const options: TestOptions = { alpha: experiment.alpha, better: metric.better, ...(experiment.sequential ? { sequentialTuning: experiment.sequential_tuning } : {}) };
  const control = units.arms.indexOf(experiment.control);
  const arms: MetricResult['arms'] = {};
  const versus: MetricResult['versus_control'] = {};
  units.arms.forEach((arm, a) => {
    arms[arm] = { units: summaries[a]!.n, mean: summaries[a]!.mean, variance: summaries[a]!.variance };
    if (a === control || control < 0) return;
    let comparison: Comparison;
    if (experiment.cuped && metric.kind !== 'mean') comparison = compareCuped(metric.kind, cuped[control]!, cuped[a]!, options);
    else comparison = compare(summaries[control]!, summaries[a]!, options);
    const { absolute, relative, chance_to_win, significant, cuped_applied } = comparison;
    const controlMean = summaries[control]!.mean;
    versus[arm] = { absolute, relative: controlMean === 0 ? null : relative, chance_to_win, significant, cuped_applied };
  });
  return { metric_id: metric.id, key: metric.key, role, arms, versus_control: versus };
}

/** Every figure of the results answer, from the database as it is now. */
export async function computeResults(database: Database, experiment: Experiment, metrics: Metric[], now = Date.now()): Promise<Results> {
  const sqlite = database.sqlite;
  if (!sqlite) {
    // One snapshot for every read. A million exposed units hashed for the events' join take some
    // 63 MB: within work_mem (with PostgreSQL's hash_mem_multiplier), not split into batches on disk.
    return database.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (db) => {
        await sql`set local work_mem = '64MB'`.execute(db);
        const units = await readExposedUnitsPostgres(db, experiment, now);
        const values = await readUnitValuesPostgres(db, experiment, metricsOf(experiment, metrics).map(({ metric }) => metric), units, now);
        return resultsOf(experiment, metrics, now, units, (metric) => values.get(metric)!);
      });
  }
  return resultsOf(experiment, metrics, now, readExposedUnitsSqlite(sqlite, experiment, now), (metric, units) => readUnitValuesSqlite(sqlite, experiment, metric, units, now));
}

/** The experiment's metrics with their roles, in its order; those deleted since are left out. */
function metricsOf(experiment: Experiment, metrics: readonly Metric[]): { metric: Metric; role: string }[] {
  const byId = new Map(metrics.map((metric) => [metric.id, metric]));
  return experiment.metrics.flatMap(({ metric_id, role }) => {
    const metric = byId.get(metric_id);
    return metric ? [{ metric, role }] : [];
  });
}

/** The results from the exposed units and each metric's values per unit, however they were read. */
async function resultsOf(experiment: Experiment, metrics: Metric[], now: number, units: UnitArms, valuesOf: (metric: Metric, units: UnitArms) => UnitValues | Promise<UnitValues>): Promise<Results> {
  const shares = experiment.expected_shares ?? {};
  const armUnits = new Array<number>(units.arms.length).fill(0);
  let multiple = 0;
  for (let i = 0; i < units.size; i++) {
    const a = units.arm[i]!;
    if (a === MULTIPLE) multiple++;
    else armUnits[a]!++;
  }
  const arms: Results['arms'] = {};
  units.arms.forEach((arm, a) => (arms[arm] = { units: armUnits[a]!, expected_share: shares[arm]! }));
  const metricResults: MetricResult[] = [];
  for (const { metric, role } of metricsOf(experiment, metrics)) {
    const values = await valuesOf(metric, units);
    metricResults.push(metricResult(experiment, metric, role, units, values));
  }
  const withShare = units.arms.filter((arm) => shares[arm]! > 0);
  return {
    computed_at: new Date(now).toISOString(),
    units: units.size,
    arms,
    srm: sampleRatioMismatch(Object.fromEntries(units.arms.map((arm, a) => [arm, armUnits[a]!])), shares),
    multiple_exposures: { units: multiple, share: units.size === 0 ? 0 : multiple / units.size },
    metrics: metricResults,
    enough_data: withShare.length >= 2 && withShare.every((arm) => arms[arm]!.units >= experiment.min_units),
  };
}

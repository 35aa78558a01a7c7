/**
 * The writes of guarded releases (docs/releases.md), each run inside ProjectWrites.apply: create
 * (the flag switched on at the first step), pause, resume, abort (a rollback), and a check's
 * decision (advance, complete, pause, roll back), taken by the release checks (due-work/release-checks.ts) exactly
 * once. The flag's own changes go through flags/flag-writes.ts, the ordinary write path, with the
 * release as their origin. Also the participants of every write that keep a flag's rollout the
 * release's while it runs.
 */
import type { Db } from '../../db/database.js';
import { newId, nowIso, toIso } from '../../db/values.js';
import { AlreadySettled, Conflict, Invalid, NotFound } from '../../errors.js';
import type { Actor, Change } from '../changes/changes.schemas.js';
import type { RecordChange, WriteContext } from '../changes/project-writes.js';
import { requireEnvironment } from '../environments/environments.repository.js';
import { updateFlagWrite, type Flag, type FlagPut } from '../flags/flag-writes.js';
import { requireProjectMetrics } from '../experiments/metrics.repository.js';
import { requireFlag, type FlagScope } from '../flags/flags.repository.js';
import { flagBeforeOf, liveReleasesOf, requireReleaseRow, stepStartsOf, toRelease, type FlagBefore, type Release, type ReleaseRow, type ReleaseScope } from './releases.repository.js';
import { LIVE_STATUSES, RELEASE_DEFAULTS, type CreateReleaseBody, type ReleaseCheck, type ReleaseStatus } from './releases.schemas.js';

type ReleaseAction = 'release.created' | 'release.advanced' | 'release.paused' | 'release.resumed' | 'release.rolled_back' | 'release.aborted' | 'release.completed';

/** The audit record of a change to a release; `check`: the figures a decision was taken on. */
const releaseChange = (action: ReleaseAction, before: Release | null, after: Release, check?: ReleaseCheck): Change => ({
  action,
  resource_type: 'release',
  resource_id: after.id,
  resource_key: after.flag_key,
  environment_id: after.environment_id,
  before,
  after: check ? { ...after, check } : after,
});

const isLive = (status: string) => (LIVE_STATUSES as readonly string[]).includes(status);

/** The variants as the release serves them: all of the weight on the treatment. */
const weightsOn = (flag: Flag, treatment: string) => flag.variants.map((variant) => ({ ...variant, weight: variant.key === treatment ? 1000 : 0 }));

/** Whether the flag's state lets a release start at `first` %: off, or on with 0 < rollout ≤ first. */
function refuseUnlessReleasable(flag: Flag, first: number): void {
  if (flag.enabled && flag.everyone_else === 'off') throw new Conflict(`Flag "${flag.key}" serves no rollout (everyone_else is off): set everyone_else to rollout, or switch it off, before a release`);
  if (flag.enabled && !(flag.rollout_percentage > 0 && flag.rollout_percentage <= first)) {
    throw new Conflict(`Flag "${flag.key}" is on at ${flag.rollout_percentage} %: a release starts from a flag that is off, or on at a rollout between 1 % and its first step (${first} %)`);
  }
}

function checkedSteps(steps: readonly number[]): number[] {
  for (let i = 1; i < steps.length; i++) if (steps[i]! <= steps[i - 1]!) throw new Invalid(`steps must increase: ${steps[i]} after ${steps[i - 1]}`);
  if (steps[steps.length - 1] !== 100) throw new Invalid('steps: the last step must be 100');
  return [...steps];
}

/**
 * A new release, running at its first step: the flag switched on at that rollout (with a
 * treatment variant, that variant weighted 1000 and the off variant for everyone else). 400s for
 * its fields, 409 for the flag's state or another live release on it.
 */
export async function createReleaseWrite(trx: Db, record: RecordChange, scope: FlagScope, body: CreateReleaseBody, author: Actor, changeRequestId: string | null): Promise<Release> {
  await requireEnvironment(trx, scope);
  const steps = checkedSteps(body.steps ?? RELEASE_DEFAULTS.steps);
  await requireProjectMetrics(trx, scope.projectId, body.guardrails.map((guardrail) => guardrail.metric_id), 'guardrails');
  const flag = await requireFlag(trx, scope);
  let control = 'off';
  if (flag.variants.length > 0) {
    if (body.treatment === undefined) throw new Invalid(`Flag "${flag.key}" has variants: name the one the release serves as treatment`);
    if (!flag.variants.some((variant) => variant.key === body.treatment)) throw new Invalid(`treatment "${body.treatment}" is not a variant of flag "${flag.key}" (${flag.variants.map((variant) => variant.key).join(', ')})`);
    if (flag.off_variant === null || flag.off_variant === body.treatment) throw new Invalid(`Flag "${flag.key}" needs an off_variant other than "${body.treatment}": it is what everyone else is served`);
    control = flag.off_variant;
  } else if (body.treatment !== undefined && body.treatment !== 'on') {
    throw new Invalid(`treatment "${body.treatment}": flag "${flag.key}" has no variants, it serves on`);
  }
  refuseUnlessReleasable(flag, steps[0]!);
  const live = await liveReleasesOf(trx, [flag.id]);
  if (live.length > 0) throw new Conflict(`Flag "${flag.key}" already has a ${live[0]!.status} release in this environment: abort it first`);
  const treatment = body.treatment ?? 'on';
  const before: FlagBefore = { enabled: flag.enabled, rollout_percentage: flag.rollout_percentage, ...(flag.variants.length > 0 ? { variants: flag.variants, off_variant: flag.off_variant } : {}) };
  await updateFlagWrite(trx, record, scope, { enabled: true, rollout_percentage: steps[0]!, ...(flag.variants.length > 0 ? { variants: weightsOn(flag, treatment) } : {}) });
  const now = Date.now();
  const row = {
    id: newId(),
    project_id: scope.projectId,
    environment_id: scope.envId,
    flag_id: flag.id,
    flag_key: flag.key,
    steps: JSON.stringify(steps),
    hold_seconds: body.hold_seconds ?? RELEASE_DEFAULTS.hold_seconds,
    check_seconds: body.check_seconds ?? RELEASE_DEFAULTS.check_seconds,
    min_units: body.min_units ?? RELEASE_DEFAULTS.min_units,
    guardrails: JSON.stringify(body.guardrails.map((guardrail) => ({ metric_id: guardrail.metric_id, tolerance: guardrail.tolerance ?? RELEASE_DEFAULTS.tolerance }))),
    treatment,
    control,
    status: 'running',
    current_step: 0,
    step_started: JSON.stringify([now]),
    flag_before: JSON.stringify(before),
    reason: null,
    created_by_user_id: author.user_id,
    created_by_email: author.email,
    change_request_id: changeRequestId,
    created_at: new Date(now).toISOString(),
    updated_at: new Date(now).toISOString(),
    ended_at: null,
    // Checked at once (the releaser's first check records where it starts), then every check_seconds.
    next_check_at: new Date(now).toISOString(),
    claimed_until: null,
  };
  await trx.insertInto('releases').values(row).execute();
  const created = toRelease(await requireReleaseRow(trx, { ...scope, releaseId: row.id }));
  record(releaseChange('release.created', null, created));
  return created;
}

/** The flag given back what it had before the release (its rollout, variants, and off again if it was off). */
async function rollBackFlag(trx: Db, record: RecordChange, row: ReleaseRow): Promise<void> {
  const before = flagBeforeOf(row);
  const scope = { projectId: row.project_id, envId: row.environment_id, flagId: row.flag_id };
  const set: FlagPut = { enabled: before.enabled, rollout_percentage: before.rollout_percentage };
  if (before.variants) Object.assign(set, { variants: before.variants, off_variant: before.off_variant ?? null });
  try {
    await updateFlagWrite(trx, record, scope, set);
  } catch (error) {
    if (!(error instanceof NotFound)) throw error; // a flag deleted meanwhile has nothing to give back
  }
}

async function moveRelease(trx: Db, row: ReleaseRow, set: Partial<{ status: ReleaseStatus; reason: string | null; current_step: number; step_started: string; ended_at: string | null; next_check_at: string | null }>): Promise<Release> {
  const updated = await trx
    .updateTable('releases')
    .set({ ...set, updated_at: nowIso(), claimed_until: null })
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return toRelease(updated);
}

const ended = (status: ReleaseStatus, reason: string) => ({ status, reason, ended_at: nowIso(), next_check_at: null });
const byWhom = (actor: Actor) => actor.email ?? (actor.token_id ? `API token ${actor.token_id}` : 'someone');

/** Running → paused by someone; its checks go on (a harmful guardrail still rolls it back). */
export async function pauseReleaseWrite(trx: Db, record: RecordChange, scope: ReleaseScope, actor: Actor): Promise<Release> {
  const row = await requireReleaseRow(trx, scope);
  if (row.status !== 'running') throw new Conflict(`Only a running release can be paused; this one is ${row.status}`);
  const after = await moveRelease(trx, row, { status: 'paused', reason: `Paused by ${byWhom(actor)}.` });
  record(releaseChange('release.paused', toRelease(row), after));
  return after;
}

/** Paused → running: it advances again when its step's hold has passed. */
export async function resumeReleaseWrite(trx: Db, record: RecordChange, scope: ReleaseScope): Promise<Release> {
  const row = await requireReleaseRow(trx, scope);
  if (row.status !== 'paused') throw new Conflict(`Only a paused release can be resumed; this one is ${row.status}`);
  const after = await moveRelease(trx, row, { status: 'running', reason: null });
  record(releaseChange('release.resumed', toRelease(row), after));
  return after;
}

/** Running or paused → aborted: the flag rolled back, through the ordinary write path. */
export async function abortReleaseWrite(trx: Db, record: RecordChange, scope: ReleaseScope, actor: Actor): Promise<Release> {
  const row = await requireReleaseRow(trx, scope);
  if (!isLive(row.status)) throw new Conflict(`The release has ended (${row.status})`);
  await rollBackFlag(trx, record, row);
  const after = await moveRelease(trx, row, ended('aborted', `Aborted by ${byWhom(actor)}: the flag was rolled back.`));
  record(releaseChange('release.aborted', toRelease(row), after));
  return after;
}

/** What the releaser leased: a decision applies only if the release is still where it was. */
export interface CheckedState {
  id: string;
  status: string;
  current_step: number;
  next_check_at: string;
}

/** The release row if it is where the check found it, else AlreadySettled. */
export async function rowAsChecked(trx: Db, checked: CheckedState): Promise<ReleaseRow> {
  const row = await trx.selectFrom('releases').selectAll().where('id', '=', checked.id).executeTakeFirst();
  if (!row || row.status !== checked.status || row.current_step !== checked.current_step || row.next_check_at === null || Date.parse(toIso(row.next_check_at)) !== Date.parse(checked.next_check_at)) throw new AlreadySettled();
  return row;
}

/**
 * A check's decision, in the write's transaction: the check recorded, then the release moved and
 * the flag with it. Refused (AlreadySettled) when the release moved since the check began, so a
 * decision is taken once whatever the number of instances.
 */
export async function decideWrite(trx: Db, record: RecordChange, checked: CheckedState, check: ReleaseCheck, nextCheckAt: string): Promise<Release> {
  const row = await rowAsChecked(trx, checked);
  await trx.insertInto('release_checks').values({ id: newId(), release_id: row.id, at: check.at, figures: JSON.stringify(check) }).execute();
  const before = toRelease(row);
  const scope = { projectId: row.project_id, envId: row.environment_id, flagId: row.flag_id };
  switch (check.decision) {
    case 'roll_back': {
      await rollBackFlag(trx, record, row);
      const after = await moveRelease(trx, row, ended('rolled_back', check.explanation));
      record(releaseChange('release.rolled_back', before, after, check));
      return after;
    }
    case 'pause': {
      const after = await moveRelease(trx, row, { status: 'paused', reason: check.explanation, next_check_at: nextCheckAt });
      record(releaseChange('release.paused', before, after, check));
      return after;
    }
    case 'advance':
    case 'complete': {
      const steps = before.steps;
      const next = row.current_step + 1;
      await updateFlagWrite(trx, record, scope, { rollout_percentage: steps[next]! });
      const starts = [...stepStartsOf(row), Date.parse(check.at)];
      const moved = { current_step: next, step_started: JSON.stringify(starts) };
      const after = await moveRelease(trx, row, check.decision === 'complete' ? { ...moved, ...ended('completed', check.explanation) } : { ...moved, next_check_at: nextCheckAt });
      record(releaseChange(check.decision === 'complete' ? 'release.completed' : 'release.advanced', before, after, check));
      return after;
    }
    case 'wait':
      throw new Error('a wait is recorded by recordWait, outside the change path');
  }
}

/** A check that changes nothing: recorded, and the next one due; no event, no new revision of the project. */
export async function recordWait(db: Db, checked: CheckedState, check: ReleaseCheck, nextCheckAt: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await rowAsChecked(trx, checked);
    await trx.insertInto('release_checks').values({ id: newId(), release_id: checked.id, at: check.at, figures: JSON.stringify(check) }).execute();
    await trx.updateTable('releases').set({ next_check_at: nextCheckAt, claimed_until: null }).where('id', '=', checked.id).execute();
  });
}

// ---------------------------------------------------------------- participants of every write (app.ts)

const flagOf = (change: Change) => (change.after ?? change.before) as Flag;
/** What a release owns of a flag while it runs. */
const rolloutFields = (flag: Flag) => JSON.stringify([flag.rollout_percentage, flag.everyone_else, flag.variants, flag.off_variant]);

/**
 * A check of every write: 409 for a change of the rollout of a flag whose release is running or
 * paused, unless the release makes it (its origin) or the same write creates it. Switching the
 * flag off is not refused: it aborts the release (endReleasesOfChangedFlags).
 */
export async function refuseRolloutChangesDuringRelease(trx: Db, changes: readonly Change[], context: WriteContext): Promise<void> {
  const changed = changes.filter((change) => change.resource_type === 'flag' && change.before && change.after && (flagOf(change) as Flag).enabled && rolloutFields(change.before as Flag) !== rolloutFields(change.after as Flag));
  if (changed.length === 0) return;
  const created = new Set(changes.filter((change) => change.action === 'release.created').map((change) => change.resource_id));
  for (const release of await liveReleasesOf(trx, changed.map((change) => change.resource_id))) {
    if (release.id === context.origin.release_id || created.has(release.id)) continue;
    throw new Conflict(`Flag "${release.flag_key}"'s rollout belongs to its ${release.status} release while it runs: pause or abort the release first (switching the flag off aborts it)`);
  }
}

/**
 * A consequence of every write: a flag switched off or deleted by anything but its release ends
 * the release (aborted); the flag stays as that write left it.
 */
export async function endReleasesOfChangedFlags(trx: Db, changes: readonly Change[], context: WriteContext): Promise<Change[]> {
  const ending = new Map<string, string>();
  for (const change of changes) {
    if (change.resource_type !== 'flag') continue;
    if (change.action === 'flag.deleted') ending.set(change.resource_id, 'Aborted: its flag was deleted.');
    else if (change.before && change.after && (change.before as Flag).enabled && !(change.after as Flag).enabled) ending.set(change.resource_id, `Aborted: its flag was switched off by ${byWhom(context.actor)}.`);
  }
  if (ending.size === 0) return [];
  const consequences: Change[] = [];
  for (const row of await liveReleasesOf(trx, [...ending.keys()])) {
    if (row.id === context.origin.release_id) continue;
    const after = await moveRelease(trx, row, ended('aborted', ending.get(row.flag_id)!));
    consequences.push(releaseChange('release.aborted', toRelease(row), after));
  }
  return consequences;
}

/**
 * Which flags' weights split their users, for Guidon's remote providers (docs/variants.md, "What
 * an OpenFeature app sees"). The evaluate answer that the remote SDK reads gives a flag served by
 * its weights the reason "Flag enabled globally", the same as a flag whose one variant has all the
 * weight: it cannot tell SPLIT from STATIC. Whether the weights split is the flag's own (it holds
 * for every user served that way), so it is asked of Guidon's OFREP endpoint, which evaluates on
 * the server and knows it: one bulk request for the flags not yet known, with the context that was
 * served so, and kept until a change of the flag. Were OFREP out of reach, such a flag answers
 * STATIC, as before.
 */
import { reasonKind } from '@guidon/engine';
import type { ClientOptions, Flags, GuidonContext } from '@guidon/sdk';
import type { AnswerKind, ProviderClient } from './core.js';

type Where = Pick<ClientOptions, 'baseUrl' | 'sdkKey' | 'environment' | 'fetch' | 'timeoutMs'>;

/** A flag that answered with a variant and "Flag enabled globally": the weights chose, or it is the same for everyone. */
const undecided = (state: Flags[string]) => typeof state.variant === 'string' && reasonKind(state.reason) === 'STATIC';

/**
 * The kind of a remote answer. POST /sdk/v1/evaluate gives a flag its reason string and nothing
 * else about it (docs/api.md, "Evaluate"), so here alone the remote providers read the kind and
 * the unmet prerequisite from that string; the local provider has both from the engine.
 */
export function remoteAnswer(state: Flags[string], weightsChose: boolean): AnswerKind {
  const kind = reasonKind(state.reason);
  const prerequisite = kind === 'PREREQUISITE_FAILED' ? /^Prerequisite (.+) not met$/.exec(state.reason)?.[1] : undefined;
  return { kind: kind === 'STATIC' && weightsChose ? 'SPLIT' : kind, prerequisite };
}

/** OpenFeature's context for OFREP, from Guidon's (targetingKey is user_id, email user_email). */
function ofrepContext(context: GuidonContext): Record<string, unknown> {
  return {
    ...(context.custom_attributes ?? {}),
    ...(typeof context.user_id === 'string' ? { targetingKey: context.user_id } : {}),
    ...(typeof context.user_email === 'string' ? { email: context.user_email } : {}),
  };
}

export class WeightSplits {
  /** Flag key → whether its weights split its users. */
  private readonly known = new Map<string, boolean>();
  private asking: Promise<void> | null = null;

  constructor(
    private readonly where: Where,
    client: ProviderClient,
  ) {
    client.on('change', ({ keys }) => {
      for (const key of keys) this.known.delete(key);
    });
    // Changes may have been missed while the data was stale.
    client.on('stale', () => this.known.clear());
  }

  /** Whether learn() would have to ask about this flag. */
  undecided(flagKey: string, state: Flags[string]): boolean {
    return undecided(state) && !this.known.has(flagKey);
  }

  /** Whether the weights chose this flag's variant for a context served `state`; meaningful once learn() ran for it. */
  chose(flagKey: string, state: Flags[string]): boolean {
    return undecided(state) && this.known.get(flagKey) === true;
  }

  /** Learns, in one OFREP request, whether the weights split each flag of `flags` (served to `context`) that is undecided and not known yet. Never throws. */
  async learn(flags: Flags, context: GuidonContext): Promise<void> {
    while (this.asking) await this.asking;
    const keys = Object.keys(flags).filter((key) => undecided(flags[key]!) && !this.known.has(key));
    if (keys.length === 0) return;
    this.asking = this.ask(keys, context).finally(() => (this.asking = null));
    await this.asking;
  }

  private async ask(keys: string[], context: GuidonContext): Promise<void> {
    try {
      const answer = await (this.where.fetch ?? fetch)(`${this.where.baseUrl.replace(/\/+$/, '')}/ofrep/v1/evaluate/flags`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sdk-key': this.where.sdkKey, 'x-environment': this.where.environment },
        body: JSON.stringify({ context: ofrepContext(context) }),
        signal: AbortSignal.timeout(this.where.timeoutMs ?? 5000),
      });
      if (!answer.ok) return;
      const body = (await answer.json()) as { flags?: { key?: unknown; reason?: unknown }[] };
      const reasons = new Map((body.flags ?? []).map((flag) => [flag.key, flag.reason]));
      for (const key of keys) if (reasons.has(key)) this.known.set(key, reasons.get(key) === 'SPLIT');
    } catch {
      // Unknown for now: STATIC, and asked again next time.
    }
  }
}

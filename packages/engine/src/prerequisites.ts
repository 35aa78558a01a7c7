/**
 * Prerequisites (docs/prerequisites.md): a flag that needs other flags of its set in a given state.
 * Compiled with the set: each prerequisite becomes the parent's index, the state it must have and
 * the variant indexes it accepts, and the set gets one order, parents before children, in which
 * every flag is evaluated once per context. What may be saved (self, cycles, depth, variants) is
 * checked here too, for the server to call at every save.
 */
import { codeOf, encodeAnswer, variantOf, type PackedAnswer } from './answer-codec.js';
import { NO_VARIANT, type FlagDefinition, type PrerequisiteDefinition } from './model.js';
import { DISABLED_CODE, ENABLED, PREREQUISITE_CODE, PREREQUISITE_LIMIT, everyoneElseCode } from './outcomes.js';
import { compileVariants } from './variants.js';

export const PREREQUISITE_LIMITS = Object.freeze({
  /** Prerequisites of one flag. */
  perFlag: PREREQUISITE_LIMIT,
  /** Links in a chain: a flag whose parents have none is at depth 1. */
  depth: 5,
});

/** One flag's prerequisites, compiled. */
export interface PrerequisitePlan {
  /** Per prerequisite, the parent's index in the set, or -1 (missing, or part of a cycle: never met). */
  readonly parents: Int32Array;
  /** Per prerequisite, 1 when the parent must answer enabled, 0 when it must answer disabled. */
  readonly enabled: Uint8Array;
  /** Per prerequisite, null, or per variant index (0..255) 1 when that variant of the parent is accepted. */
  readonly accepted: readonly (Uint8Array | null)[];
}

/** What compiling a set's prerequisites gives. */
export interface CompiledPrerequisites {
  /** Per flag, its plan, or null for a flag without prerequisites. */
  readonly plans: readonly (PrerequisitePlan | null)[];
  /** The flags with prerequisites, parents before children. */
  readonly dependents: Uint32Array;
  /** Per flag with prerequisites, it and every flag it depends on, parents before children (what evaluating it alone evaluates); else null. */
  readonly closures: readonly (Uint32Array | null)[];
  /** Whether a prerequisite names variants: then the parents' variants must be known. */
  readonly needsVariants: boolean;
}

export function compilePrerequisites(defs: readonly FlagDefinition[]): CompiledPrerequisites {
  const indexOf = new Map<string, number>();
  defs.forEach((def, index) => {
    if (!indexOf.has(def.key)) indexOf.set(def.key, index);
  });
  const listed = defs.map((def) => (def.prerequisites ?? []).slice(0, PREREQUISITE_LIMIT));
  const parentsOf = listed.map((list) => Int32Array.from(list, (p) => indexOf.get(p.flagKey) ?? -1));
  // Depth-first, parents first; an edge back into the path (a cycle) is cut: that prerequisite is never met.
  const state = new Uint8Array(defs.length); // 0 new, 1 on the path, 2 done
  const order: number[] = [];
  const visit = (root: number) => {
    const stack: [number, number][] = [[root, 0]];
    state[root] = 1;
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const [flag, next] = top;
      const parents = parentsOf[flag]!;
      if (next < parents.length) {
        top[1]++;
        const parent = parents[next]!;
        if (parent < 0) continue;
        if (state[parent] === 1) parents[next] = -1;
        else if (state[parent] === 0) {
          state[parent] = 1;
          stack.push([parent, 0]);
        }
        continue;
      }
      state[flag] = 2;
      order.push(flag);
      stack.pop();
    }
  };
  for (let i = 0; i < defs.length; i++) if (state[i] === 0) visit(i);
  const position = new Int32Array(defs.length);
  order.forEach((flag, at) => (position[flag] = at));

  let needsVariants = false;
  const plans = defs.map((def, index): PrerequisitePlan | null => {
    const list = listed[index]!;
    if (list.length === 0) return null;
    const parents = parentsOf[index]!;
    const accepted = list.map((p, k) => {
      if (p.variants === undefined || p.variants === null) return null;
      needsVariants = true;
      const mask = new Uint8Array(256);
      const parent = parents[k]!;
      const variants = parent >= 0 ? (defs[parent]!.variants ?? []) : [];
      for (const key of p.variants) {
        const at = variants.findIndex((variant) => variant.key === key);
        if (at >= 0 && at !== NO_VARIANT) mask[at] = 1;
      }
      return mask;
    });
    return { parents, enabled: Uint8Array.from(list, (p) => (p.enabled === false ? 0 : 1)), accepted };
  });
  const dependents = Uint32Array.from(order.filter((flag) => plans[flag] !== null));
  const closures = plans.map((plan, index) => {
    if (plan === null) return null;
    const seen = new Set<number>([index]);
    const todo = [index];
    while (todo.length > 0) {
      const flag = todo.pop()!;
      for (const parent of plans[flag]?.parents ?? []) {
        if (parent >= 0 && !seen.has(parent)) {
          seen.add(parent);
          todo.push(parent);
        }
      }
    }
    return Uint32Array.from([...seen].sort((a, b) => position[a]! - position[b]!));
  });
  return { plans, dependents, closures, needsVariants };
}

/**
 * Per flag, the position of a prerequisite that no context meets, or -1. A parent that answers the
 * same for every context (disabled; no rules and everyone else not by bucket; or itself folded)
 * decides its prerequisite at compile time. Folded only where every prerequisite before that one is
 * met for every context, so that the position is the one evaluation would find. Such a flag answers
 * off naming that parent without its parents being evaluated (docs/prerequisites.md, "Order of
 * evaluation"). A parent that does not exist, or closes a cycle, is never met: folded too.
 */
export function foldPrerequisites(defs: readonly FlagDefinition[], compiled: CompiledPrerequisites): Int32Array {
  const neverMet = new Int32Array(defs.length).fill(-1);
  // Per flag, its answer when the same for every context (answer-codec.ts), else -1.
  const fixed = defs.map((def, index) => (compiled.plans[index] === null || !def.enabled ? fixedAnswer(def, null) : -1));
  for (const index of compiled.dependents) {
    const def = defs[index]!;
    if (!def.enabled) continue;
    const { parents, enabled, accepted } = compiled.plans[index]!;
    let k = 0;
    for (; k < parents.length; k++) {
      const parent = parents[k]!;
      const answer = parent < 0 ? -1 : fixed[parent]!;
      if (parent >= 0 && answer < 0) break; // the parent's answer depends on the context
      const mask = accepted[k];
      const met = parent >= 0 && ENABLED[codeOf(answer)] === enabled[k] && (mask === null || mask === undefined || mask[variantOf(answer)] === 1);
      if (!met) {
        neverMet[index] = k;
        fixed[index] = fixedAnswer(def, PREREQUISITE_CODE + k);
        break;
      }
    }
    // Every prerequisite met for every context: the flag's own answer decides.
    if (k === parents.length) fixed[index] = fixedAnswer(def, null);
  }
  return neverMet;
}

/** A flag's answer when the same for every context, else -1; `off`: the code it answers off with, whatever its rules. */
function fixedAnswer(def: FlagDefinition, off: number | null): PackedAnswer {
  let code = off ?? (def.enabled ? -1 : DISABLED_CODE);
  if (code < 0) {
    if (def.rules.some((rule) => rule.enabled === true)) return -1;
    code = everyoneElseCode(def);
    if (code < 0) return -1;
  }
  const plan = compileVariants(def);
  if (plan === null) return encodeAnswer(code);
  const variant = ENABLED[code] === 1 ? plan.only : plan.off;
  return variant < 0 ? -1 : encodeAnswer(code, variant);
}

/**
 * The position of the first prerequisite of `plan` not met by the parents' codes and variants
 * (`variants` undefined: no flag of the set has any), or -1 when all are met.
 */
export function firstUnmet(plan: PrerequisitePlan, codes: Uint8Array, variants: Uint8Array | undefined): number {
  const { parents, enabled, accepted } = plan;
  for (let k = 0; k < parents.length; k++) {
    const parent = parents[k]!;
    if (parent < 0 || ENABLED[codes[parent]!] !== enabled[k]) return k;
    const mask = accepted[k];
    if (mask !== null && mask !== undefined && (variants === undefined || mask[variants[parent]!] !== 1)) return k;
  }
  return -1;
}

/** A flag as the checks below read it: what the API stores. */
export interface PrerequisiteFlag {
  key: string;
  variants?: readonly { key: string }[] | null | undefined;
  prerequisites?: readonly PrerequisiteDefinition[] | null | undefined;
}

/** What is wrong with one flag's own list (self, duplicates, variants), as a message, or null. */
function listProblem(flag: PrerequisiteFlag, byKey: ReadonlyMap<string, PrerequisiteFlag>): string | null {
  const list = flag.prerequisites ?? [];
  if (list.length > PREREQUISITE_LIMITS.perFlag) return `prerequisites: at most ${PREREQUISITE_LIMITS.perFlag}`;
  const seen = new Set<string>();
  for (const [k, p] of list.entries()) {
    const where = `prerequisites[${k}]`;
    if (typeof p.flagKey !== 'string' || p.flagKey === '') return `${where}: flag_key is required`;
    if (p.flagKey === flag.key) return `${where}: a flag cannot be its own prerequisite (${flag.key} → ${flag.key})`;
    if (seen.has(p.flagKey)) return `${where}: ${p.flagKey} is named twice`;
    seen.add(p.flagKey);
    if (p.variants !== undefined && p.variants !== null) {
      if (p.enabled === false) return `${where}: variants only with enabled true (${flag.key} → ${p.flagKey})`;
      if (p.variants.length === 0) return `${where}: variants, when given, holds at least one key (${flag.key} → ${p.flagKey})`;
      const parent = byKey.get(p.flagKey);
      if (parent === undefined) return `${where}: ${p.flagKey} does not exist, so its variants cannot be named (${flag.key} → ${p.flagKey})`;
      const keys = new Set((parent.variants ?? []).map((variant) => variant.key));
      const unknown = p.variants.find((key) => !keys.has(key));
      if (unknown !== undefined) return `${where}: ${p.flagKey} has no variant "${unknown}" (${flag.key} → ${p.flagKey})`;
    }
  }
  return null;
}

/**
 * What is wrong with the prerequisites of each flag of `keys` among `flags` (an environment's
 * flags as they would be saved; of two with one key, the later counts), as messages that name
 * the chain. A parent that does not exist is allowed (never met until it does); its variants
 * cannot be checked then. One pass over the whole graph, linear in its flags and links: its
 * strongly connected components (Tarjan's, iterative) find the cycles, and the longest chain
 * above and below each flag is counted once, parents before children.
 */
export function prerequisiteProblems(flags: readonly PrerequisiteFlag[], keys: Iterable<string>): Map<string, string> {
  const byKey = new Map<string, PrerequisiteFlag>();
  for (const flag of flags) byKey.set(flag.key, flag);
  const nodes = [...byKey.values()];
  const indexOf = new Map(nodes.map((flag, i) => [flag.key, i]));
  const n = nodes.length;
  // Links to existing parents, each once, in the order listed.
  const parents = nodes.map((flag) => [...new Set((flag.prerequisites ?? []).map((p) => indexOf.get(p.flagKey)).filter((i): i is number => i !== undefined))]);
  const children: number[][] = nodes.map(() => []);
  parents.forEach((list, child) => list.forEach((parent) => children[parent]!.push(child)));

  // Tarjan: a component is closed after every component above it (its parents') is.
  const index = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const component = new Int32Array(n);
  const stack: number[] = [];
  const order: number[][] = []; // the components, parents' first
  let counter = 0;
  for (let root = 0; root < n; root++) {
    if (index[root] !== -1) continue;
    const frames: [number, number][] = [[root, 0]];
    index[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = 1;
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!;
      const [v, next] = frame;
      if (next < parents[v]!.length) {
        frame[1]++;
        const w = parents[v]![next]!;
        if (index[w] === -1) {
          index[w] = low[w] = counter++;
          stack.push(w);
          onStack[w] = 1;
          frames.push([w, 0]);
        } else if (onStack[w]) low[v] = Math.min(low[v]!, index[w]!);
        continue;
      }
      frames.pop();
      if (frames.length > 0) {
        const u = frames[frames.length - 1]![0];
        low[u] = Math.min(low[u]!, low[v]!);
      }
      if (low[v] !== index[v]) continue;
      const members: number[] = [];
      let w: number;
      do {
        w = stack.pop()!;
        onStack[w] = 0;
        component[w] = order.length;
        members.push(w);
      } while (w !== v);
      order.push(members);
    }
  }

  // Per flag: a cycle at or above it (the component holding it, or -1), and the longest chain up.
  const cycleAbove = new Int32Array(n).fill(-1);
  const up = new Int32Array(n);
  const upNext = new Int32Array(n).fill(-1);
  for (const [c, members] of order.entries()) {
    const cyclic = members.length > 1 || parents[members[0]!]!.includes(members[0]!);
    for (const v of members) {
      if (cyclic) cycleAbove[v] = c;
      for (const p of parents[v]!) {
        if (cycleAbove[v] === -1 && cycleAbove[p] !== -1) cycleAbove[v] = cycleAbove[p]!;
        if (component[p] !== c && up[p]! + 1 > up[v]!) {
          up[v] = up[p]! + 1;
          upNext[v] = p;
        }
      }
    }
  }
  // …and down, children first, through flags without a cycle above.
  const down = new Int32Array(n);
  const downNext = new Int32Array(n).fill(-1);
  for (let c = order.length - 1; c >= 0; c--) {
    for (const v of order[c]!) {
      for (const child of children[v]!) {
        if (cycleAbove[child] === -1 && down[child]! + 1 > down[v]!) {
          down[v] = down[child]! + 1;
          downNext[v] = child;
        }
      }
    }
  }

  /** A cycle of component c through `from` when it lies on one (the shortest, found breadth-first), as keys. */
  const cycleThrough = (c: number, from: number): string[] => {
    const start = component[from] === c ? from : order[c]![0]!;
    const came = new Map<number, number>();
    const queue = [start];
    for (let at = 0; at < queue.length; at++) {
      const v = queue[at]!;
      for (const p of parents[v]!) {
        if (component[p] !== c || came.has(p)) continue;
        came.set(p, v);
        if (p === start) {
          const path: number[] = [];
          for (let x = v; x !== start; x = came.get(x)!) path.push(x);
          return [start, ...path.reverse(), start].map((i) => nodes[i]!.key);
        }
        queue.push(p);
      }
    }
    return [nodes[start]!.key];
  };

  const problems = new Map<string, string>();
  for (const key of keys) {
    const v = indexOf.get(key);
    if (v === undefined || problems.has(key)) continue;
    const own = listProblem(nodes[v]!, byKey);
    if (own !== null) {
      problems.set(key, own);
      continue;
    }
    if (cycleAbove[v] !== -1) {
      problems.set(key, `prerequisites: a cycle (${cycleThrough(cycleAbove[v]!, v).join(' → ')})`);
      continue;
    }
    if (up[v]! + down[v]! <= PREREQUISITE_LIMITS.depth) continue;
    const chain: string[] = [];
    for (let x = v; x !== -1; x = downNext[x]!) chain.unshift(nodes[x]!.key);
    for (let x = upNext[v]!; x !== -1; x = upNext[x]!) chain.push(nodes[x]!.key);
    problems.set(key, `prerequisites: a chain deeper than ${PREREQUISITE_LIMITS.depth} links (${chain.join(' → ')})`);
  }
  return problems;
}

/** What is wrong with `flag`'s prerequisites among the environment's `others` (the other flags, as stored), or null: prerequisiteProblems for one flag. */
export function prerequisitesProblem(flag: PrerequisiteFlag, others: readonly PrerequisiteFlag[]): string | null {
  return prerequisiteProblems([...others, flag], [flag.key]).get(flag.key) ?? null;
}

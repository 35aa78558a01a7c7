/** What the benchmarks read from /proc: a process's CPU time, and how busy the machine was meanwhile. */
import { readFileSync } from 'node:fs';

/** Clock ticks per second (USER_HZ): 100 on Linux. */
const CLOCK_TICKS = 100;

/** CPU seconds (user + system) a process has used, its threads included; 0 once it has exited. */
export function processCpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS; // utime, stime (fields 14 and 15)
  } catch {
    return 0;
  }
}

/** Jiffies of all CPUs so far: compare two readings with busyBetween. */
export function cpuJiffies(): { busy: number; steal: number; total: number } {
  const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = values.map(Number) as number[];
  const total = user! + nice! + system! + idle! + iowait! + irq! + softirq! + steal!;
  return { busy: total - idle! - iowait!, steal: steal!, total };
}

/** The machine's busy % and steal % between two readings of cpuJiffies. */
export function busyBetween(before: ReturnType<typeof cpuJiffies>, after: ReturnType<typeof cpuJiffies>): { busyPct: number; stealPct: number } {
  const total = after.total - before.total || 1;
  return { busyPct: (100 * (after.busy - before.busy)) / total, stealPct: (100 * (after.steal - before.steal)) / total };
}

/** The 1-minute load average, as a line of the report says it. */
export const loadAverage = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
};

/**
 * The kernel's count of connections its listen queues turned away so far (TcpExt ListenOverflows,
 * /proc/net/netstat), for the whole machine: a client's connection attempt dropped there is retried
 * by its kernel a second later. Compare two readings.
 */
export function listenOverflows(): number {
  const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n');
  const names = lines.find((line) => line.startsWith('TcpExt:'))?.split(/\s+/) ?? [];
  const values = lines.filter((line) => line.startsWith('TcpExt:'))[1]?.split(/\s+/) ?? [];
  const at = names.indexOf('ListenOverflows');
  return at < 0 ? NaN : Number(values[at]);
}

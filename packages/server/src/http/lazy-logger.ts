import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
const LEVELS: readonly Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

/**
 * A request's logger, made on first use. Fastify makes a pino child for every request (its
 * bindings serialized and redacted, and its log methods rebuilt when the route sets a logLevel),
 * which cost evaluate more than its flag evaluation while it logs nothing. This one holds the same
 * bindings and options and makes the very same child the first time a line passes its level.
 */
class LazyChildLogger {
  private made: FastifyBaseLogger | undefined;
  readonly level: string;
  private readonly threshold: number;

  constructor(
    private readonly parent: FastifyBaseLogger & { levels?: { values: Record<string, number> } },
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {
    this.level = options.level ?? parent.level;
    this.threshold = this.valueOf(this.level);
  }

  private valueOf(level: string): number {
    return level === 'silent' ? Infinity : (this.parent.levels?.values[level] ?? 0);
  }

  /** The pino child, made now if not yet. */
  logger(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  isLevelEnabled(level: string): boolean {
    return this.valueOf(level) >= this.threshold;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger().child(bindings, options);
  }

  silent(): void {}
}

interface LazyChildLogger extends Record<Level, (...args: unknown[]) => void> {}
for (const level of LEVELS) {
  LazyChildLogger.prototype[level] = function (this: LazyChildLogger, ...args: unknown[]) {
    if (this.isLevelEnabled(level)) (this.logger()[level] as (...args: unknown[]) => void)(...args);
  };
}

/** Fastify's childLoggerFactory option: request loggers made on first use. */
export function lazyChildLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyChildLogger(logger, bindings, options) as unknown as FastifyBaseLogger;
}

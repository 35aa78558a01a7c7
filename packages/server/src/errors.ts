/**
 * The one error family of the service. Modules throw these; only the error handler in app.ts
 * turns them into HTTP answers.
 */
export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class Invalid extends AppError {
  constructor(message: string) {
    super(400, message);
  }
}

/** Where a document is wrong and how: `path` as `flags[2].environments.production.rules[0]`. */
export interface Problem {
  path: string;
  message: string;
}

/** A document with problems (an import, docs/flags-as-code.md): the 400 lists every one. */
export class InvalidDocument extends Invalid {
  constructor(readonly problems: Problem[]) {
    super(`The document has ${problems.length === 1 ? 'a problem' : `${problems.length} problems`}: ${problems.slice(0, 3).map((problem) => problem.message).join('; ')}${problems.length > 3 ? '; …' : ''}`);
  }
}

export class Unauthorized extends AppError {
  constructor(message = 'Unauthorized') {
    super(401, message);
  }
}

export class Forbidden extends AppError {
  constructor(message = 'Forbidden') {
    super(403, message);
  }
}

export class NotFound extends AppError {
  constructor(message = 'Not found') {
    super(404, message);
  }
}

export class Conflict extends AppError {
  constructor(message: string) {
    super(409, message);
  }
}

/**
 * What was to move once (a due schedule, a change request being applied, a release's check) was
 * moved meanwhile, by another instance or person. Work that runs later (modules/due-work/) skips
 * it; a route that meets it answers 409, with a message that says why where it knows more.
 */
export class AlreadySettled extends Conflict {
  constructor(message = 'It was settled meanwhile: read it again') {
    super(message);
  }
}

export class RateLimited extends AppError {
  constructor(
    readonly retryAfterSeconds: number,
    message = 'Too many requests, try again later',
  ) {
    super(429, message);
  }
}

/** A service this one depends on (the OpenID provider) could not be reached or gave an unusable answer. */
export class UpstreamFailed extends AppError {
  constructor(message: string) {
    super(502, message);
  }
}

/** The database cannot be reached or cannot write now (translated from driver errors in src/db). */
export class Unavailable extends AppError {
  readonly retryAfterSeconds = 5;
  constructor(message = 'The database is unavailable; try again shortly') {
    super(503, message);
  }
}

/** Sets Retry-After for an error that says when to come back (a rate limit, the database away): JSON answers and the sign-in pages alike. */
export function setRetryAfter(error: AppError, reply: { header(name: string, value: string): unknown }): void {
  if (error instanceof RateLimited || error instanceof Unavailable) reply.header('retry-after', String(error.retryAfterSeconds));
}

import { SerializerSelector, type SerializerCompiler, type SerializerFactory } from '@fastify/fast-json-stringify-compiler';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyServerOptions } from 'fastify';

/*
 * Fastify's request validators and response serializers, compiled once per process, when first
 * used. Compiling them all was most of what building the app cost (about half a second for our
 * routes), though most routes are not called for a while after a start, and a process serving
 * only SDKs never calls most of them (start-up time: docs/performance.md). Fastify also compiles
 * again for every app it builds, though the schemas are the same: a process that builds several
 * (the tests start a server per suite) paid it each time. A compiled function depends only on its
 * schema, the shared schemas it may reference and the options, so those, as JSON, are its key.
 */

/** Compilations not made yet (compileDeferred makes them: a test checks that every schema compiles). */
const deferred = new Set<() => unknown>();

/** Makes every compilation deferred so far; throws the first failure. */
export function compileDeferred(): number {
  const count = deferred.size;
  for (const make of [...deferred]) make();
  return count;
}

/** `make()`'s value on first call, kept; made by compileDeferred at the latest. */
export function onFirstUse<T>(make: () => T): () => T {
  let value: T | undefined;
  const get = () => {
    if (value === undefined) {
      value = make();
      deferred.delete(get);
    }
    return value;
  };
  deferred.add(get);
  return get;
}

/** Each distinct set of shared schemas and options, as JSON, to a short id that goes into the keys. */
const contexts = new Map<string, number>();
const contextOf = (value: unknown) => {
  const json = JSON.stringify(value);
  return contexts.get(json) ?? contexts.set(json, contexts.size).size - 1;
};

/** The value under key, made and kept the first time. */
function kept<K, T>(map: Map<K, T>, key: K, make: () => T): T {
  let value = map.get(key);
  if (value === undefined) map.set(key, (value = make()));
  return value;
}

const serializers = new Map<string, ReturnType<SerializerCompiler>>();

/** For Fastify's `schemaController.compilersFactory.buildSerializer`. */
export function buildSerializer(): SerializerFactory {
  const compilerFor = SerializerSelector();
  return (externalSchemas, options) => {
    // Fastify asks once per plugin context: the shared schemas are read when a serializer is first made.
    const compiler = onFirstUse(() => ({ compile: compilerFor(externalSchemas, options), context: contextOf([externalSchemas, options]) }));
    return (route) => {
      const serializer = onFirstUse(() => {
        const { compile, context } = compiler();
        return kept(serializers, `${context} ${JSON.stringify(route.schema)}`, () => compile(route));
      });
      return (data) => serializer()(data);
    };
  };
}

type ValidatorFactory = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']>;

const validators = new Map<string, ValidateFunction>();
const ajvs = new Map<number, { strict: Ajv; coercing: Ajv }>();

/**
 * Bodies are validated without type coercion ("50" is not an integer: docs/api.md, Errors); query strings
 * and path parameters are text by nature, so they are coerced. `shared`: the schemas that request
 * schemas may reference by $id.
 */
function validatorCompiler(shared: readonly object[]) {
  // Fastify asks once per plugin context: the shared schemas are read, and the Ajv pair made, when a validator is first made.
  const compilers = onFirstUse(() => {
    const context = contextOf(shared);
    // discriminator: a oneOf chosen by a tag (a change request's `op`) reports the chosen branch's errors only.
    const options = { removeAdditional: false, useDefaults: false, allErrors: false, strict: false, discriminator: true } as const;
    const ajv = kept(ajvs, context, () => ({
      strict: addFormats.default(new Ajv({ ...options, schemas: [...shared], coerceTypes: false })),
      coercing: addFormats.default(new Ajv({ ...options, schemas: [...shared], coerceTypes: 'array' })),
    }));
    return { context, ...ajv };
  });
  return (schema: object, body: boolean): ValidateFunction => {
    const { context, strict, coercing } = compilers();
    return kept(validators, `${context} ${body} ${JSON.stringify(schema)}`, () => (body ? strict : coercing).compile(schema));
  };
}

/**
 * A validator that compiles on its first call. Fastify reads `errors` after a failed call, and
 * passes the request as the parent of the value (so a coerced query string replaces its own)
 * to a validator that has `schemaEnv`, as Ajv's have: both are the compiled validator's.
 */
function validatorOnFirstUse(compiled: () => ValidateFunction): ValidateFunction {
  const validate = function (this: unknown, data: unknown, parent?: Parameters<ValidateFunction>[1]) {
    const valid = compiled().call(this, data, parent);
    validate.errors = compiled().errors;
    return valid;
  } as ValidateFunction;
  Object.defineProperty(validate, 'schemaEnv', { get: () => compiled().schemaEnv });
  return validate;
}

/**
 * For Fastify's `schemaController.compilersFactory.buildValidator`, so that every plugin context
 * validates this way: one that adds a schema of its own gets a compiler from this factory, where
 * `app.setValidatorCompiler` would have left it Fastify's default (which coerces bodies).
 */
export function buildValidator(): ValidatorFactory {
  return ((externalSchemas: Record<string, object> | undefined) => {
    const compile = validatorCompiler(Object.values(externalSchemas ?? {}));
    return ({ schema, httpPart }: { schema: object; httpPart?: string }) => validatorOnFirstUse(onFirstUse(() => compile(schema, httpPart === 'body')));
  }) as unknown as ValidatorFactory;
}

/** A body validator compiled as the routes' are, now, for code that validates before Fastify does (evaluate's direct path). */
export function bodyValidator(schema: object): ValidateFunction {
  return validatorCompiler([])(schema, true);
}

import { SerializerSelector, type SerializerCompiler, type SerializerFactory } from '@fastify/fast-json-stringify-compiler';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyServerOptions } from 'fastify';

/*
 * Fastify's request validators and response serializers, compiled once per process. Compiling them
 * is most of what building the app costs (about half a second for our routes), and Fastify does it
 * again for every app it builds, though the schemas are the same: a process that builds several
 * (the tests start a server per suite) paid it each time. A compiled function depends only on its
 * schema, the shared schemas it may reference and the options, so those, as JSON, are its key.
 */

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
    const compile = compilerFor(externalSchemas, options);
    const context = contextOf([externalSchemas, options]);
    return (route) => kept(serializers, `${context} ${JSON.stringify(route.schema)}`, () => compile(route));
  };
}

type ValidatorFactory = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']>;

const validators = new Map<string, ValidateFunction>();
const ajvs = new Map<number, { strict: Ajv; coercing: Ajv }>();

/**
 * Bodies are validated without type coercion ("50" is not an integer, docs/api.md, "Errors"); query strings
 * and path parameters are text by nature, so they are coerced. `shared`: the schemas that request
 * schemas may reference by $id.
 */
function validatorCompiler(shared: readonly object[]) {
  const context = contextOf(shared);
  const { strict, coercing } = kept(ajvs, context, () => {
    // discriminator: a oneOf chosen by a tag (a change request's `op`) reports the chosen branch's errors only.
    const options = { removeAdditional: false, useDefaults: false, allErrors: false, strict: false, discriminator: true } as const;
    return {
      strict: addFormats.default(new Ajv({ ...options, schemas: [...shared], coerceTypes: false })),
      coercing: addFormats.default(new Ajv({ ...options, schemas: [...shared], coerceTypes: 'array' })),
    };
  });
  return ({ schema, httpPart }: { schema: object; httpPart?: string }): ValidateFunction => {
    const body = httpPart === 'body';
    return kept(validators, `${context} ${body} ${JSON.stringify(schema)}`, () => (body ? strict : coercing).compile(schema));
  };
}

/**
 * For Fastify's `schemaController.compilersFactory.buildValidator`, so that every plugin context
 * validates this way: one that adds a schema of its own gets a compiler from this factory, where
 * `app.setValidatorCompiler` would have left it Fastify's default (which coerces bodies).
 */
export function buildValidator(): ValidatorFactory {
  return ((externalSchemas: Record<string, object> | undefined) => validatorCompiler(Object.values(externalSchemas ?? {}))) as unknown as ValidatorFactory;
}

/** A body validator compiled as the routes' are, for code that validates before Fastify does (evaluate's direct path). */
export function bodyValidator(schema: object): ValidateFunction {
  return validatorCompiler([])({ schema, httpPart: 'body' });
}

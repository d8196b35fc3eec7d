/**
 * A tool's zod schema, both sides: the arguments crossgate judges are the ones the tool receives (the
 * output side, after the tool's own parse), and a reviewer's edit is checked by the server against
 * the input side as JSON Schema before it is saved.
 */

import type { JsonObject } from '@crossgate/client';
import { z } from 'zod';

type ZodLike = z.ZodType;

/** The arguments `schema` turns `args` into, or the reason it refuses them. */
export type Validated = { ok: true; args: JsonObject } | { ok: false; problem: string };

function isZod(schema: unknown): schema is ZodLike {
  return typeof schema === 'object' && schema !== null && '_zod' in schema;
}

/** Parse `args` as the tool will; without a zod schema they are taken as they are. */
export function validateArgs(schema: unknown, args: unknown): Validated {
  if (!isPlainObject(args)) return { ok: false, problem: 'its arguments are not a JSON object' };
  if (!isZod(schema)) return { ok: true, args };
  const parsed = schema.safeParse(args);
  if (!parsed.success) return { ok: false, problem: z.prettifyError(parsed.error).replace(/\s*\n\s*/g, '; ') };
  if (!isPlainObject(parsed.data)) return { ok: false, problem: 'its schema does not give a JSON object' };
  return { ok: true, args: JSON.parse(JSON.stringify(parsed.data)) as JsonObject };
}

/**
 * The JSON Schema of what the tool accepts (zod's input side), carried on the request so the server
 * refuses an edit the tool could not take. Undeclared fields never reach the tool, so they are refused.
 */
export function inputJsonSchema(schema: unknown): JsonObject | null {
  if (isZod(schema)) {
    const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonObject;
    delete json.$schema;
    if (json.type === 'object' && !('additionalProperties' in json)) json.additionalProperties = false;
    return json;
  }
  return isPlainObject(schema) ? schema : null;
}

function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

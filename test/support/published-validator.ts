import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import published from '../insights/published-schemas.json';

/**
 * Validates against the published components (test/insights/published-schemas.json, copied verbatim
 * from the published document), strictly: every object schema also refuses properties it does not
 * list, so an answer cannot carry invented fields. Throws naming what does not match.
 */
export function publishedValidator(): (name: string, body: unknown) => true {
  const strict = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strict);
    if (!value || typeof value !== 'object') return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = k === 'properties' ? mapValues(v, strict) : strict(v);
    if (out.type === 'object' && out.properties && !out.additionalProperties) out.additionalProperties = false;
    return out;
  };
  const mapValues = (o: unknown, f: (v: unknown) => unknown) =>
    Object.fromEntries(Object.entries(o as Record<string, unknown>).map(([k, v]) => [k, f(v)]));
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addFormat('int64', true);
  ajv.addFormat('int32', true);
  ajv.addSchema({ $id: 'published', ...(strict(published) as object) });
  return (name: string, body: unknown) => {
    const validate = ajv.getSchema(`published#/components/schemas/${name}`)!;
    const ok = validate(body);
    if (!ok) throw new Error(`${name}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`);
    return true;
  };
}

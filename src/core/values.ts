/** Whether a value (parsed JSON, say) is an object with keys: not null, not an array. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** What a value is, for an error that names it: "null", "an array", or its typeof ("number", "object", …). */
export function kindOf(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}

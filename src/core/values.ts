/** Whether a value (parsed JSON, say) is an object with keys: not null, not an array. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** What a value is, for an error that names it: "null", "an array", or its typeof ("number", "object", …). */
export function kindOf(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}

/** Bytes counted per value besides its strings (an object's or array's slot, a number, a boolean). */
const VALUE_OVERHEAD = 16;

/**
 * About what a value of parsed JSON keeps in memory: its strings' lengths (keys included) plus a few bytes per value;
 * for budgets of input held (InputBudget). Walks the value once, without recursion.
 */
export function approximateBytes(value: unknown): number {
  let bytes = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    bytes += VALUE_OVERHEAD;
    if (typeof next === 'string') bytes += next.length;
    else if (Array.isArray(next)) for (const item of next) pending.push(item);
    else if (next !== null && typeof next === 'object') {
      for (const [key, item] of Object.entries(next)) {
        bytes += key.length;
        pending.push(item);
      }
    }
  }
  return bytes;
}

/**
 * Small conversions every provider adapter needs: the gateway keeps action arguments as JSON text
 * and images by format name; providers want an object and a MIME type.
 */

/**
 * A call's arguments as the object providers take (Anthropic's `input`, Gemini's `args`, LangChain's
 * `args`): empty arguments are `{}`, and arguments that are not a JSON object are passed under `input`.
 */
export function callArgsObject(args: string): Record<string, unknown> {
  if (args.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : { input: parsed };
  } catch {
    return { input: args };
  }
}

/** The MIME type of an image format name, lower case, "jpg" as "jpeg". */
export function imageMimeType(format: string): string {
  const lower = format.toLowerCase();
  return `image/${lower === 'jpg' ? 'jpeg' : lower}`;
}

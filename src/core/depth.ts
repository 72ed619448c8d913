/**
 * How deep input may nest. JSON.parse takes any depth, but much of what follows (graphql-js's parser,
 * scalar coercion, JSON.stringify of a request to an upstream, the AG-UI encoder) recurses and
 * overflows the stack a few thousand levels down. Nothing legitimate comes near this.
 */
export const MAX_NESTING = 100;

/** Whether a parsed JSON value nests objects and arrays deeper than `limit`. Iterative: never overflows itself. */
export function nestsDeeperThan(value: unknown, limit = MAX_NESTING): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [current, depth] = stack.pop()!;
    if (depth > limit) return true;
    const children = Array.isArray(current) ? current : Object.values(current as object);
    for (const child of children) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * Whether a text (a JSON string field, or a GraphQL document) nests its brackets `{ [ (` deeper than
 * `limit`, counted outside strings (and, for GraphQL, comments). Reads the text once, parses nothing.
 */
export function textNestsDeeperThan(text: string, limit = MAX_NESTING): boolean {
  // Depth never exceeds the number of opening brackets: most texts have fewer than `limit` of them,
  // and counting those with indexOf (native) is about ten times quicker than reading every character.
  if (openingsAtMost(text, limit)) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // A string, or a GraphQL block string ("""…"""): skipped with its escapes.
      if (text.startsWith('"""', i)) {
        const end = text.indexOf('"""', i + 3);
        if (end === -1) return false;
        i = end + 2;
        continue;
      }
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c /* \ */) i++;
    } else if (c === 0x23 /* # */) {
      while (i < text.length && text.charCodeAt(i) !== 0x0a) i++;
    } else if (c === 0x7b || c === 0x5b || c === 0x28) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d || c === 0x29) {
      depth--;
    }
  }
  return false;
}

/** Whether the text holds at most `limit` opening brackets `{ [ (`, anywhere (strings included). */
function openingsAtMost(text: string, limit: number): boolean {
  let count = 0;
  for (const bracket of OPENINGS) {
    for (let at = text.indexOf(bracket); at !== -1; at = text.indexOf(bracket, at + 1)) {
      if (++count > limit) return false;
    }
  }
  return true;
}

const OPENINGS = ['{', '[', '('] as const;

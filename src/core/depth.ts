/**
 * How deep input may nest. JSON.parse takes any depth, but much of what follows (graphql-js's parser,
 * scalar coercion, JSON.stringify of a request to an upstream, the AG-UI encoder) recurses and
 * overflows the stack a few thousand levels down. Nothing legitimate comes near this.
 */
export const MAX_NESTING = 100;

/**
 * Whether a parsed JSON value nests objects and arrays deeper than `limit`. Recursive, but never more than `limit` + 1
 * calls deep, so it cannot overflow the stack itself; about twenty times quicker than reading the value's text
 * (textNestsDeeperThan), so a request body is checked here once parsed (JSON.parse itself takes any depth).
 */
export function nestsDeeperThan(value: unknown, limit = MAX_NESTING): boolean {
  return value !== null && typeof value === 'object' && deeper(value, limit, 1, inheritsEnumerable());
}

/**
 * Whether plain objects inherit enumerable properties (Object.prototype given some): then `for…in` would read them,
 * and `deeper` checks each key is the object's own (which doubles its cost, so only then).
 */
function inheritsEnumerable(): boolean {
  for (const key in {}) return key !== undefined;
  return false;
}

function deeper(value: object, limit: number, depth: number, ownOnly: boolean): boolean {
  if (depth > limit) return true;
  if (Array.isArray(value)) {
    for (const child of value)
      if (child !== null && typeof child === 'object' && deeper(child, limit, depth + 1, ownOnly)) return true;
    return false;
  }
  for (const key in value) {
    if (ownOnly && !Object.hasOwn(value, key)) continue;
    const child = (value as Record<string, unknown>)[key];
    if (child !== null && typeof child === 'object' && deeper(child, limit, depth + 1, ownOnly)) return true;
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
        // Its one escape is \""" (GraphQL's lexer reads it as three quotes, not the end).
        let end = text.indexOf('"""', i + 3);
        while (end !== -1 && text.charCodeAt(end - 1) === 0x5c /* \ */) end = text.indexOf('"""', end + 3);
        if (end === -1) return false;
        i = end + 2;
        continue;
      }
      i = stringEnd(text, i);
      if (i === -1) return false;
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

/**
 * Where the string that opens at `start` closes: the next quote not escaped (after an even number of backslashes), or
 * -1 when none does. Found with indexOf, which is native: most of a request's text is in its strings, and reading
 * those a character at a time in JavaScript cost about 1.2 ms for a 380 KB conversation (a thread of 1,000 turns, sent
 * whole), against about 0.1 ms.
 */
function stringEnd(text: string, start: number): number {
  for (let end = text.indexOf('"', start + 1); end !== -1; end = text.indexOf('"', end + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === 0x5c /* \ */) backslashes++;
    if (backslashes % 2 === 0) return end;
  }
  return -1;
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

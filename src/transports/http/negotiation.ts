import Negotiator from 'negotiator';

/** What the client can take, read from its Accept header. */
export interface Acceptance {
  multipart: boolean;
  sse: boolean;
  /**
   * A JSON type (`application/json`, `application/graphql-response+json`, `application/*`, `*\/*`), or
   * no Accept at all.
   */
  json: boolean;
}

/** An Accept header read: what the client takes, and what Apollo is shown. */
export interface AcceptReading {
  readonly acceptance: Readonly<Acceptance>;
  readonly apollo: string;
  /**
   * The content type Apollo gives one result for `apollo` (its chooseContentTypeForSingleResultResponse), for the
   * answers the executor makes itself; undefined where Apollo would answer 406.
   */
  readonly single: string | undefined;
}

/** The format Apollo streams in: the one the stock client (urql) merges correctly. */
const LEGACY_MULTIPART = 'multipart/mixed; deferSpec=20220824';

/**
 * Accept headers already read, by their text: clients send a handful of distinct ones, and reading
 * one (splitting, regular expressions) is about 10 µs a request. Bounded: emptied when full, and
 * long headers are not kept.
 */
const acceptReadings = new Map<string, AcceptReading>();
const MAX_ACCEPT_READINGS = 64;
const MAX_KEPT_ACCEPT_CHARS = 512;

export function readAccept(accept: string | undefined): AcceptReading {
  const key = accept ?? '';
  let reading = acceptReadings.get(key);
  if (reading === undefined) {
    const apollo = apolloAccept(accept);
    reading = { acceptance: Object.freeze(readAcceptance(accept)), apollo, single: singleResultType(apollo) };
    if (key.length <= MAX_KEPT_ACCEPT_CHARS) {
      if (acceptReadings.size >= MAX_ACCEPT_READINGS) acceptReadings.clear();
      acceptReadings.set(key, reading);
    }
  }
  return reading;
}

/** Parses an Accept header into what matters here (q=0 entries are refusals). */
function readAcceptance(accept: string | undefined): Acceptance {
  const result: Acceptance = { multipart: false, sse: false, json: (accept ?? '').trim() === '' };
  for (const range of (accept ?? '').split(',')) {
    const [type, ...params] = range
      .trim()
      .toLowerCase()
      .split(';')
      .map((part) => part.trim());
    if (params.some((param) => /^q=0(\.0*)?$/.test(param))) continue;
    if (type === '*/*') result.json = true;
    if (type === 'multipart/mixed' || type === 'multipart/*' || type === '*/*') result.multipart = true;
    else if (type === 'text/event-stream') result.sse = true;
    else if (type === 'application/json' || type === 'application/graphql-response+json' || type === 'application/*') {
      result.json = true;
    }
  }
  return result;
}

/**
 * The Accept header Apollo sees. Apollo runs @defer/@stream only for `multipart/mixed;
 * deferSpec=20220824`, and runs everything else on graphql-js, which cannot resolve the streamed
 * lists. So it always sees that type (the transport decides the real format), after the client's
 * own JSON and HTML types, which Apollo uses for single results and the Sandbox page.
 */
const APOLLO_TYPES = /^(application\/(json|graphql-response\+json)|\*\/\*|application\/\*|text\/html)\b/i;

function apolloAccept(accept: string | undefined): string {
  const kept = (accept ?? '')
    .split(',')
    .map((range) => range.trim())
    .filter((range) => APOLLO_TYPES.test(range));
  if (!kept.some((range) => !/^text\/html/i.test(range))) kept.push('application/json');
  return [...kept, `${LEGACY_MULTIPART};q=0.001`].join(', ');
}

/** The JSON types Apollo answers one result with, in its order (its MEDIA_TYPES). */
const SINGLE_RESULT_TYPES = [
  'application/json; charset=utf-8',
  'application/graphql-response+json; charset=utf-8',
  'application/json; callbackSpec=1.0; charset=utf-8',
];

/** As Apollo picks one result's content type for the Accept header it is shown (never empty here). */
function singleResultType(apollo: string): string | undefined {
  return new Negotiator({ headers: { accept: apollo } }).mediaType(SINGLE_RESULT_TYPES);
}

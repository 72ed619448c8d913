// Incremental delivery as multipart/mixed, framed byte for byte as Apollo Server frames it (its
// writeMultipartBody), in the format the stock client (urql) merges correctly.

/** The content type of a streamed answer in multipart. */
export const MULTIPART_CONTENT_TYPE = 'multipart/mixed; boundary="-"; deferSpec=20220824';

/** What a multipart answer begins with, before its first part. */
export const MULTIPART_START = '\r\n---\r\n';

/**
 * A part framed as Apollo frames its later parts (each ends with the delimiter and its line break,
 * "\r\n---\r\n", and the next begins with its header) holding `{}`: Apollo Client skips a result with no
 * keys; urql merges it into what it has (data, errors and hasNext unchanged).
 */
export const MULTIPART_KEEP_ALIVE = 'content-type: application/json; charset=utf-8\r\n\r\n{}\r\n---\r\n';

/** How Apollo's last chunk ends: the closing delimiter. */
export const MULTIPART_END = '-----\r\n';

/** A payload (its JSON) framed as Apollo frames it in `multipart/mixed; deferSpec=20220824`. */
export function multipartPart(json: string, hasNext: boolean): string {
  return `content-type: application/json; charset=utf-8\r\n\r\n${json}\r\n---${hasNext ? '' : '--'}\r\n`;
}

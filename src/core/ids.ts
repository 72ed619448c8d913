/** The longest thread or run id a client may send, over every protocol. */
export const MAX_ID_LENGTH = 256;

/** A UTF-16 surrogate without its pair (text that cannot be encoded as UTF-8 or in a URI as it is). */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

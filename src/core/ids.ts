/** The longest thread or run id a client may send, over every protocol. */
export const MAX_ID_LENGTH = 256;

import { pino, symbols, type DestinationStream, type Logger } from 'pino';

/**
 * `logger.child(bindings)`, with the child's serialized bindings kept as one flat string.
 *
 * Why: pino serializes a child's bindings once, by appending `,"key":value` piece by piece, and V8
 * keeps such a string as a tree of its pieces (about 30 small strings for a run's five bindings,
 * some 800 bytes) until something reads it whole. A gateway holding thousands of runs keeps one
 * child per run for the run's life, and its first log line may come only at the end. A flat copy of
 * the same characters is a quarter of that. `JSON.parse(JSON.stringify(…))` copies a string exactly,
 * lone surrogates included. Loggers that are not pino's (no serialized bindings) are left as they are.
 */
export function childLogger(logger: Logger, bindings: Record<string, unknown>): Logger {
  const child = logger.child(bindings);
  const holder = child as unknown as Record<symbol, unknown>;
  const serialized = holder[symbols.chindingsSym];
  if (typeof serialized === 'string') holder[symbols.chindingsSym] = JSON.parse(JSON.stringify(serialized)) as string;
  return child;
}

/** Log lines past this many bytes waiting to be written are dropped rather than held (stdout not draining). */
const MAX_WAITING_BYTES = 16 * 1024 * 1024;

/**
 * Where `npm start`'s JSON log lines go: file descriptor `fd` (stdout), written asynchronously, so that
 * under load they leave in batches instead of one write (a system call) each, twice per request. pino
 * writes whatever is still waiting when the process exits (not when it is killed or runs out of memory);
 * if the descriptor stops draining, lines beyond 16 MB are dropped rather than held.
 *
 * sonic-boom (pino's destination) is given each line as bytes, its `buffer` mode, not as a string. In its
 * string mode, a line that comes while a write is on its way (under load, nearly every line) is appended
 * to the waiting string, whose byte length is then measured, which makes V8 copy the whole waiting string
 * into one: about 8 KB copied and dropped per line in the burst benchmark, a request's two lines some 7%
 * of all it allocates (BENCHMARKS.md). In buffer mode the waiting lines are kept as a list and joined once
 * per write: a line is copied once or twice, the waiting batch never once per line.
 *
 * Known, in sonic-boom 4.2's buffer mode: after a write fails with an error other than EPIPE or EAGAIN (a
 * full disk behind stdout, say), the exit's synchronous flush may write the lines it still holds damaged.
 * pino re-emits such an error, which ends the process either way; EPIPE (the reader gone) stops logging.
 */
export function jsonLines(fd: number): DestinationStream {
  const stream = pino.destination({ dest: fd, sync: false, maxLength: MAX_WAITING_BYTES, contentMode: 'buffer' });
  return {
    // sonic-boom's types take a string only; its buffer mode takes a Buffer.
    write: (line: string) => stream.write(Buffer.from(line) as unknown as string),
    // pino's logger.flush() asks its destination for it.
    flush: (callback?: (error?: Error) => void) => stream.flush(callback),
  } as DestinationStream;
}

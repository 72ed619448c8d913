/**
 * Reads a provider SDK's stream of a model's answer, each item into `take`. What `take` throws (an item of the wrong
 * shape, the run's own refusal) ends the read and is thrown as it is: it is not the connection's failure. What the
 * stream throws is, made an error by `streamError`. An aborted run's reason comes first: an SDK ends an aborted stream
 * quietly.
 */
export async function readSdkStream<T>(
  stream: AsyncIterable<T>,
  take: (item: T) => void,
  signal: AbortSignal,
  streamError: (error: unknown) => unknown,
): Promise<void> {
  let takeError: { error: unknown } | undefined;
  try {
    for await (const item of stream) {
      try {
        take(item);
      } catch (error) {
        takeError = { error };
        break;
      }
    }
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw streamError(error);
  }
  if (signal.aborted) throw signal.reason;
  if (takeError) throw takeError.error;
}

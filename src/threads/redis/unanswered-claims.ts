import type { ScriptedRedis } from './scripts.js';

// The release of a claim whose answer never came (RedisRecords.claim): Redis may still take the claim, and would hold
// the thread for claimTimeoutMs for a run that is not coming.

/** How long after a failed attempt the release of an unanswered claim is sent again. */
const RELEASE_RETRY_MS = 500;
/** The most releases of unanswered claims kept trying at once (Redis stalled under a burst of runs). */
const MAX_PENDING_RELEASES = 10_000;

/** What the releases take of RedisRecords: its connection and key names. */
interface ClaimRecords {
  readonly redis: ScriptedRedis | undefined;
  threadKey(threadId: string, ...parts: string[]): string;
}

export class UnansweredClaims {
  /** The tokens of unanswered claims whose release is being tried. */
  private readonly pending = new Set<string>();

  constructor(private readonly records: ClaimRecords) {}

  /**
   * After a claim failed with `error`: its release, unless it was refused unsent (then Redis never had it). The
   * claim's fresh run id is its token (cgClaim writes it as meta's `claimToken`), and the release frees the thread
   * only if the claim under that token holds it (cgReleaseUnanswered).
   */
  release(error: unknown, threadId: string, token: string): void {
    if (refusedUnsent(error) || this.pending.size >= MAX_PENDING_RELEASES) return;
    this.pending.add(token);
    this.send(threadId, token);
  }

  /**
   * Frees the thread if the unanswered claim whose token (fresh run id) is `token` took it (cgReleaseUnanswered), and
   * sends that again, RELEASE_RETRY_MS after each attempt that fails, until one is answered or the store closes. It
   * cannot be sent while the connection is down or not yet ready again (commands are refused then), which may last
   * as long as Redis loads its data after a restart; and ioredis sends the commands a dropped connection left
   * unanswered, the claim among them, first thing once the connection is ready (autoResendUnfulfilledCommands). So
   * on one server a release that is answered ran after the claim, wherever the claim was. Sending it again is
   * harmless: it frees only a lock taken under its token. (On a Redis Cluster, commands a failed node left are sent
   * again one by one, through redirections: a release may then overtake its claim, which holds the thread until
   * claimTimeoutMs.) At most MAX_PENDING_RELEASES are kept trying at once.
   */
  private send(threadId: string, token: string): void {
    const { redis } = this.records;
    if (!redis || redis.status === 'end') {
      this.pending.delete(token);
      return;
    }
    const lock = this.records.threadKey(threadId, 'lock');
    redis.cgReleaseUnanswered(lock, this.records.threadKey(threadId, 'meta'), token).then(
      () => this.pending.delete(token),
      () => setTimeout(() => this.send(threadId, token), RELEASE_RETRY_MS).unref(),
    );
  }
}

/** Whether a command failed without being sent: ioredis refuses commands while not connected and ready. */
function refusedUnsent(error: unknown): boolean {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  return cause instanceof Error && /enableOfflineQueue options is false/.test(cause.message);
}

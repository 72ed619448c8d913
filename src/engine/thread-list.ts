import { BadUserInputError, NotSupportedError, UnauthenticatedError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import type { ThreadChange, ThreadStore, ThreadSummary } from '../threads/store.js';
import {
  DEFAULT_THREAD_PAGE,
  MAX_THREAD_PAGE,
  checkedName,
  decodeCursor,
  encodeCursor,
  type ThreadListRequest,
  type ThreadPage,
} from './thread-pages.js';

/** How long a delete waits for the thread's run to end (it was asked to stop) before removing it anyway. */
const DELETE_WAIT_MS = 5_000;

/**
 * The thread list, as both protocols serve it (GraphQL's `copilotThreads` and its mutations, AG-UI's `/threads`): a
 * caller's threads of one agent, a page at a time, and their renames, archives and deletes. With authentication each
 * caller has a list of its own threads; without it, one list of the threads that belong to no one, served only when
 * `listAnonymous` says so.
 */
export class ThreadList {
  constructor(
    private readonly store: ThreadStore,
    private readonly policies: { authenticated?: boolean; listAnonymous?: boolean },
  ) {}

  /**
   * Whether the thread list is served: with authentication (each caller's own threads), or without it when
   * `listAnonymous` says so (the threads that belong to no one).
   */
  get served(): boolean {
    return this.policies.authenticated === true || this.policies.listAnonymous === true;
  }

  /** A page of the caller's threads of one agent, most recently run first. */
  async page(request: ThreadListRequest, principal?: Principal): Promise<ThreadPage> {
    const scope = this.scopeOf(principal);
    const limit = request.limit ?? DEFAULT_THREAD_PAGE;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_THREAD_PAGE)
      throw new BadUserInputError(`limit must be a whole number from 1 to ${MAX_THREAD_PAGE}.`, {
        limit,
      });
    const page = await this.store.list({
      scope,
      agentId: request.agentId,
      includeArchived: request.includeArchived === true,
      limit,
      ...(request.cursor !== undefined ? { after: decodeCursor(request.cursor) } : {}),
    });
    return { threads: page.threads, nextCursor: page.next ? encodeCursor(page.next) : null };
  }

  /**
   * The caller's thread's list entry: undefined when there is none, or it is another caller's (the two cannot be
   * told apart), or it belongs to another agent than `agentId` (when given).
   */
  async summary(threadId: string, principal?: Principal, agentId?: string): Promise<ThreadSummary | undefined> {
    const scope = this.scopeOf(principal);
    const summary = await this.store.summary(threadId);
    if (!summary || (summary.owner ?? '') !== scope) return undefined;
    if (agentId !== undefined && summary.agentId !== agentId) return undefined;
    return summary;
  }

  /**
   * Renames or (un)archives the caller's thread; undefined when it is not the caller's (see summary). A new name is
   * trimmed, then must be 1 to MAX_THREAD_NAME characters of well-formed text (BAD_USER_INPUT otherwise), whichever
   * protocol sent it.
   */
  async update(
    threadId: string,
    change: ThreadChange,
    principal?: Principal,
    agentId?: string,
  ): Promise<ThreadSummary | undefined> {
    const checked = change.name === undefined ? change : { ...change, name: checkedName(change.name) };
    if (!(await this.summary(threadId, principal, agentId))) return undefined;
    // The owner is checked again by the store in the same step as the change (the thread may have been deleted and
    // made again by someone else since).
    return this.store.update(threadId, this.scopeOf(principal), checked);
  }

  /**
   * Deletes the caller's thread: a run going on is stopped first (it ends RUN_STOPPED, "the thread was deleted",
   * and its clients see that end), then every record of the thread goes. Resolves with whether it was the caller's.
   */
  async remove(threadId: string, principal?: Principal, agentId?: string): Promise<boolean> {
    if (!(await this.summary(threadId, principal, agentId))) return false;
    const running = await this.store.requestStop(threadId, undefined, 'deleted');
    if (running !== undefined) {
      const deadline = Date.now() + DELETE_WAIT_MS;
      for (let wait = 10; Date.now() < deadline; wait = Math.min(wait * 2, 250)) {
        const run = await this.store.run(threadId, running);
        if (!run || run.finishedAt !== null) break;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
    return this.store.remove(threadId, this.scopeOf(principal));
  }

  /**
   * Whose list a caller sees: its principal's threads, or those of no one (anonymous list). NOT_SUPPORTED when the
   * list is off; UNAUTHENTICATED with authentication on and no principal.
   */
  private scopeOf(principal: Principal | undefined): string {
    if (!this.served)
      throw new NotSupportedError(
        'The thread list is off: it is served per caller with authentication on, or to everyone with ' +
          'THREAD_LIST_ANONYMOUS=true (every caller then sees, renames and deletes every thread that belongs to ' +
          'no one).',
      );
    if (this.policies.authenticated === true) {
      if (!principal) throw new UnauthenticatedError('The thread list needs an authenticated caller.');
      return principal.id;
    }
    return '';
  }
}

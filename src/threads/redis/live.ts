import type { RedisClient } from './connection.js';
import { RunNotFoundError, StoreUnavailableError, toGatewayError } from '../../core/errors.js';
import type { SequencedEvent } from '../../core/events.js';
import { EventFeed } from '../feed.js';
import type { StopHandler, StopReason } from '../store.js';
import type { RedisRecords } from './records.js';

/** The stop channel's notice that a run's clients were ended unrecorded (RedisRunLog.giveUp): its followers end too. */
export const GAVE_UP = 'unrecorded';

/** A follower of a live channel: takes published batches, reads the log again when told, or ends. */
interface LiveListener {
  deliver(events: SequencedEvent[]): void;
  resync(): void;
  fail(error: Error): void;
}

/**
 * The store's subscriber connection: the live channels its followers listen on (one subscription per
 * channel, shared by every follower of the run on this instance) and the stop requests every instance
 * hears. A run's events are published on its channel by the script that stores them.
 */
export class LiveChannels {
  /** Live followers by channel, and the channel's subscription. */
  private readonly live = new Map<string, { listeners: Set<LiveListener>; subscribed: Promise<void> }>();
  private readonly stopHandlers: StopHandler[] = [];
  /** The subscriber connection, once the store has connected (attach). */
  subscriber!: RedisClient;

  /** `leaseMs`: a follower that hears nothing for a third of it reads the log again. */
  /** The channel stop requests come on (its name made once: every message on the subscriber is compared to it). */
  private readonly stopChannel: string;

  constructor(
    private readonly records: RedisRecords,
    private readonly leaseMs: number,
  ) {
    this.stopChannel = records.key('stop');
  }

  /** On a Redis Cluster: live channels are shard channels (SSUBSCRIBE to the shard of the thread's slot). */
  private sharded = false;

  /** Takes the store's subscriber connection: what is published on it, and its (re)connections. */
  attach(subscriber: RedisClient, sharded: boolean): void {
    this.subscriber = subscriber;
    this.sharded = sharded;
    subscriber.on('message', (channel: string, message: string) => this.onMessage(channel, message));
    subscriber.on('ready', () => this.onSubscriberReady());
    if (sharded) {
      subscriber.on('smessage', (channel: string, message: string) => this.onMessage(channel, message));
      // A shard's subscriber connected again (to a promoted replica, after a failover): what was published
      // meanwhile is lost to it.
      subscriber.on('+subscriber', () => this.onSubscriberReady());
    }
  }

  /** Called (on the instance running it) when a run is asked to stop, from any instance. */
  onStopRequest(handler: StopHandler): void {
    this.stopHandlers.push(handler);
  }

  /**
   * Subscribes to the run's live channel first, then reads its log, so that nothing written between
   * the two is missed (the feed takes each sequence once). A live batch after a gap (a message lost
   * while the subscriber reconnected), every reconnection of the subscriber, and a quiet spell of a
   * third of the lease each make it read the log again, so a follower never waits on an event it
   * missed.
   */
  follow(threadId: string, runId: string, afterSequence: number): EventFeed {
    const feed = new EventFeed(afterSequence);
    const channel = this.records.liveChannel(threadId, runId);
    let reading = false;
    let readAgain = false;
    let early: SequencedEvent[][] = [];
    let heard = true;
    const deliver = (events: SequencedEvent[]): void => {
      heard = true;
      if (reading) {
        early.push(events);
        return;
      }
      const next = events.find((event) => event.sequence >= feed.expected);
      if (next && next.sequence > feed.expected) {
        void readAll();
        return;
      }
      for (const event of events) feed.push(event);
    };
    const readAll = async (): Promise<void> => {
      if (reading) {
        readAgain = true;
        return;
      }
      reading = true;
      try {
        do {
          readAgain = false;
          const events = await this.records.readLog(threadId, runId, feed.expected - 1);
          for (const event of events) feed.push(event);
          // Joined at (or after) the end of a finished run: nothing more will come.
          if (events.some((event) => event.type === 'RunFinished')) feed.end();
          else if (events.length === 0) {
            // Nothing stored: a run dropped (trimmed, expired) since it was looked up never ends otherwise.
            // Its record and log read together: a run that ended since (every event in one batch, as one that fails
            // at once) has all of them in that log.
            const { run, log } = await this.records.runNow(threadId, runId);
            if (!run) feed.fail(new RunNotFoundError(`Thread "${threadId}" has no run "${runId}" any more.`));
            else if (run.finishedAt !== null) {
              for (const event of log) feed.push(event);
              feed.end();
            }
          }
        } while (readAgain && !feed.done);
      } catch (error) {
        feed.fail(toGatewayError(error));
      } finally {
        reading = false;
      }
      const waiting = early;
      early = [];
      for (const batch of waiting) deliver(batch);
    };
    const listener: LiveListener = {
      deliver,
      resync: () => void readAll(),
      fail: (error) => feed.fail(toGatewayError(error)),
    };
    const quiet = setInterval(
      () => {
        if (!heard) void readAll();
        heard = false;
      },
      Math.max(250, Math.floor(this.leaseMs / 3)),
    ).unref();
    feed.whenClosed(() => {
      clearInterval(quiet);
      this.unlisten(channel, listener);
    });
    void this.listen(channel, listener).then(readAll, (error: unknown) => feed.fail(toGatewayError(error)));
    return feed;
  }

  /**
   * Adds a listener to a channel; resolves once the subscription is active (for every listener, not
   * just the first).
   */
  private listen(channel: string, listener: LiveListener): Promise<void> {
    let entry = this.live.get(channel);
    if (!entry) {
      const subscribed = (this.sharded ? this.subscriber.ssubscribe(channel) : this.subscriber.subscribe(channel)).then(
        () => {},
      );
      entry = { listeners: new Set(), subscribed };
      this.live.set(channel, entry);
      subscribed.catch(() => this.live.get(channel) === entry && this.live.delete(channel));
    }
    entry.listeners.add(listener);
    return entry.subscribed;
  }

  private unlisten(channel: string, listener: LiveListener): void {
    const entry = this.live.get(channel);
    if (!entry?.listeners.delete(listener) || entry.listeners.size > 0) return;
    this.live.delete(channel);
    (this.sharded ? this.subscriber.sunsubscribe(channel) : this.subscriber.unsubscribe(channel)).catch(() => {});
  }

  /** The subscriber (re)connected: what was published meanwhile is lost, so every follower reads its log again. */
  private onSubscriberReady(): void {
    for (const entry of this.live.values()) for (const listener of entry.listeners) listener.resync();
  }

  /**
   * The run's instance ended its clients STORE_UNAVAILABLE, its end not stored: its followers here end the same way
   * (they see only what is stored, and would otherwise wait for an end that comes only once Redis takes it).
   */
  private endFollowers(threadId: string, runId: string): void {
    const entry = this.live.get(this.records.liveChannel(threadId, runId));
    if (!entry) return;
    const error = new StoreUnavailableError(
      "The thread store (Redis) does not take this run's events; its instance ended it. Its record is completed " +
        'once the store answers: join the run then to read it.',
    );
    for (const listener of [...entry.listeners]) listener.fail(error);
  }

  private onMessage(channel: string, message: string): void {
    if (channel === this.stopChannel) {
      const [threadId, runId, reason] = message.split('\u0000');
      if (reason === GAVE_UP) return this.endFollowers(threadId, runId);
      const why: StopReason = reason === 'deleted' ? 'deleted' : 'stopped';
      for (const handler of this.stopHandlers) handler(threadId, runId, why);
      return;
    }
    const entry = this.live.get(channel);
    if (!entry) return;
    let events: SequencedEvent[];
    try {
      events = JSON.parse(message) as SequencedEvent[];
    } catch {
      return;
    }
    for (const listener of entry.listeners) listener.deliver(events);
  }
}

/**
 * A budget for the input the process holds at once (`maxBufferedInputMb`): request bodies while they are read, and
 * the input of runs in flight, each counted from its start to its end. A run outlives its client (AG-UI runs do, and
 * every run until its model answers), so without a bound a few hundred large requests to a slow model would hold
 * more than the heap and end the process; and bodies sent slowly, or never finished, would each hold up to the body
 * limit for as long as the server waits for them.
 */
export class InputBudget {
  private held = 0;

  constructor(readonly limitBytes: number) {}

  /** Takes `bytes` and says true, or says false and takes nothing when that would pass the limit. */
  take(bytes: number): boolean {
    if (this.held + bytes > this.limitBytes) return false;
    this.held += bytes;
    return true;
  }

  release(bytes: number): void {
    this.held = Math.max(0, this.held - bytes);
  }

  /** The budget as refusals name it, for a client to see which limit turned it away: `maxBufferedInputMb, 64 MiB`. */
  get name(): string {
    return `maxBufferedInputMb, ${Math.round(this.limitBytes / 1024 / 1024)} MiB`;
  }

  /** What is held now. */
  get heldBytes(): number {
    return this.held;
  }
}

// Poller: calls `task` now and then `intervalMs` after each run finishes (never two runs at
// once, so a slow daemon is not flooded). refresh() runs it early (e.g. after an event);
// stop() ends it. Used by views for the modest-rate polling the live view needs.

export class Poller {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running = false;
  private again = false;
  private stopped = false;

  constructor(
    private readonly task: () => Promise<void>,
    private readonly intervalMs: number,
  ) {
    void this.run();
  }

  refresh(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer !== null) clearTimeout(this.timer);
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
  }

  private async run(): Promise<void> {
    this.timer = null;
    this.running = true;
    try {
      await this.task();
    } catch {
      // the task shows its own errors; polling goes on
    } finally {
      this.running = false;
    }
    if (this.stopped) return;
    if (this.again) {
      this.again = false;
      void this.run();
      return;
    }
    this.timer = setTimeout(() => void this.run(), this.intervalMs);
  }
}

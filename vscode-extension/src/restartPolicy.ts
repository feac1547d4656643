/** When a crashed bridge is restarted: backoff, a reset after a healthy period, and giving up. No `vscode`. */

/** After this long up, a crash counts as the first again. */
export const healthyMs = 60_000;
/** Crashes in a row (none healthy in between) before giving up. */
export const maxCrashes = 4;

export class CrashCounter {
  private crashes = 0;

  /** A crash of a bridge that was ready at `readyAt` (0: never got ready): restart after `delayMs`, or give up. */
  record(now: number, readyAt: number): { count: number; delayMs?: number } {
    if (readyAt > 0 && now - readyAt >= healthyMs) this.crashes = 0;
    this.crashes++;
    if (this.crashes > maxCrashes) return { count: this.crashes };
    return { count: this.crashes, delayMs: Math.min(500 * 2 ** (this.crashes - 1), 8000) };
  }

  get count(): number {
    return this.crashes;
  }

  reset(): void {
    this.crashes = 0;
  }
}

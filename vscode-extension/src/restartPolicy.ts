/** When a crashed bridge is restarted: backoff, a reset after a healthy period, and giving up. No `vscode`. */

/** After this long up, a crash counts as the first again. */
export const healthyMs = 60_000;
/** Restarts in a row (none healthy in between): the crash after the last of them leaves the bridge down. */
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

/** What the give-up message says: how many stops in a row, after how many restarts. */
export function givenUp(count: number): string {
  return `It stopped ${count} times in a row (restarted ${maxCrashes} times); it is not restarted again: run “Agent Bridge: Restart” to try again.`;
}

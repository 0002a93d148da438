/**
 * Delay before restarting a crashed server: doubles with each crash in a row, capped, and
 * starts over once a server has stayed up long enough. Pure (the clock is passed in) so the
 * schedule is unit-tested without timers.
 */

export interface BackoffOptions {
    baseMs: number;
    maxMs: number;
    /** A run at least this long counts as healthy and resets the schedule. */
    resetAfterMs: number;
}

export class CrashBackoff {
    private crashesInARow = 0;
    private startedAt: number | undefined;

    constructor(private readonly options: BackoffOptions) {}

    /** Call when a server process has started. */
    started(now: number): void {
        this.startedAt = now;
    }

    /** Call when the server died unexpectedly; returns how long to wait before the next start. */
    crashed(now: number): number {
        if (this.startedAt !== undefined && now - this.startedAt >= this.options.resetAfterMs) {
            this.crashesInARow = 0;
        }
        this.startedAt = undefined;
        const delay = Math.min(this.options.maxMs, this.options.baseMs * 2 ** this.crashesInARow);
        this.crashesInARow += 1;
        return delay;
    }

    /** Crashes since the last healthy run (0 when none). */
    get crashes(): number {
        return this.crashesInARow;
    }

    /** A deliberate restart (command, settings) forgets earlier crashes. */
    reset(): void {
        this.crashesInARow = 0;
    }
}

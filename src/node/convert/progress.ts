/**
 * A one-line progress bar for a terminal: bytes done of the total, the rate and the time left,
 * redrawn at most ten times a second on the same line. Only drawn when the output is a terminal,
 * not in CI, and not when asked to be quiet (`progressWanted`).
 */
import type { Output } from "../cli/io.js";
import { formatBytes } from "../io/tensors.js";

/** Whether a progress bar should be drawn on `stream`. */
export function progressWanted(stream: Output, quiet: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  if (quiet) return false;
  if (env.CI && env.CI !== "false" && env.CI !== "0") return false;
  if (env.TERM === "dumb") return false;
  return (stream as { isTTY?: boolean }).isTTY === true;
}

/** "1m05s", "12s", "2h03m". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "?";
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

export class ProgressBar {
  private readonly out: Output;
  private readonly total: number;
  private readonly label: string;
  private readonly width: number;
  private readonly started = Date.now();
  private lastDraw = 0;
  private drawn = false;

  constructor(out: Output, total: number, label: string, columns = (out as { columns?: number }).columns ?? 80) {
    this.out = out;
    this.total = Math.max(total, 1);
    this.label = label;
    this.width = Math.max(10, Math.min(40, columns - 60));
  }

  /** Redraws with `done` bytes done (throttled; `force` draws now). */
  update(done: number, force = false): void {
    const now = Date.now();
    if (!force && now - this.lastDraw < 100) return;
    this.lastDraw = now;
    const fraction = Math.min(1, done / this.total);
    const filled = Math.round(fraction * this.width);
    const seconds = (now - this.started) / 1000;
    const rate = seconds > 0 ? done / seconds : 0;
    const eta = rate > 0 ? (this.total - done) / rate : NaN;
    const line =
      `${this.label} [${"#".repeat(filled)}${"-".repeat(this.width - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}%  ` +
      `${formatBytes(done)} / ${formatBytes(this.total)}  ${formatBytes(rate)}/s  ETA ${formatDuration(eta)}`;
    this.out.write(`\r${line}\x1b[K`);
    this.drawn = true;
  }

  /** Clears the line, leaving the terminal as it was. */
  finish(): void {
    if (this.drawn) this.out.write("\r\x1b[K");
    this.drawn = false;
  }
}

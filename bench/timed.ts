/** A bench step in a process of its own under /usr/bin/time: its wall time and peak resident memory. */
import { spawnSync } from "node:child_process";

export interface Timed {
  seconds: number;
  peakMiB: number;
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `argv` under /usr/bin/time; stderr without time's own lines. */
export function timed(argv: string[]): Timed {
  const r = spawnSync("/usr/bin/time", ["-f", "TIME %e %M", ...argv], { encoding: "utf8", maxBuffer: 512 * 2 ** 20 });
  const m = /TIME ([\d.]+) (\d+)\s*$/.exec(r.stderr);
  return { seconds: m ? Number(m[1]) : NaN, peakMiB: m ? Number(m[2]) / 1024 : NaN, status: r.status, stdout: r.stdout, stderr: r.stderr.replace(/(Command exited with non-zero status \d+\n)?TIME [\d.]+ \d+\s*$/, "") };
}

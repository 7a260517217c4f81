/**
 * Runs a list of checks through a worker script in child processes, each under a time limit per
 * check and a memory limit (V8's heap limit, and the process's resident size polled from /proc):
 * a check that overruns is a hang, one whose process dies is a crash (or a memory blow-up when
 * the heap or the resident limit was hit), and the worker is restarted after it, so every other
 * check still runs. Workers print "S <index>" when they start a check, "O <step>" when they start
 * each step of it (each step gets the time limit), and "R <json>" when done.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

export type Failure = { readonly kind: "hang" | "crash" | "memory"; readonly detail: string };

export interface SuperviseOptions {
  /** Per step of a check. */
  readonly timeoutMs: number;
  /** Per step of check `index`, where it differs from `timeoutMs` (the heavy limit probes). */
  readonly timeoutFor?: (index: number) => number;
  /** --max-old-space-size of the workers. */
  readonly heapMb: number;
  /**
   * V8's heap limit for check `index`, where it differs from `heapMb`: such a check runs in a
   * worker of its own, started with that limit.
   */
  readonly heapFor?: (index: number) => number;
  /** A worker whose resident size passes this is killed: the check it was on is a memory blow-up. */
  readonly rssLimitBytes: number;
  /** Workers at once. */
  readonly parallel: number;
}

/** What a Node child's stderr says when V8 ran out of heap. */
export const HEAP_EXHAUSTED = /heap out of memory|Allocation failed|ENOMEM|Cannot allocate memory/i;

/** A process's resident size in bytes (0 once it is gone), from /proc. */
export function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Runs checks [from, to) in one worker process at a time, restarting past any that fails. */
async function runRange<R>(
  script: string, args: readonly string[], from: number, to: number, o: SuperviseOptions,
  results: Map<number, R>, failures: Map<number, Failure>,
): Promise<void> {
  let next = from;
  while (next < to) {
    const start = next;
    const heapOf = (i: number): number => o.heapFor?.(i) ?? o.heapMb;
    // The worker takes the checks from `start` that share its heap limit.
    let end = start + 1;
    while (end < to && heapOf(end) === heapOf(start)) end++;
    await new Promise<void>((resolve) => {
      const child = spawn(process.execPath, [`--max-old-space-size=${heapOf(start)}`, script, ...args, String(start), String(end)], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let current = -1;
      /** The step of the current check the worker said it started ("O <step>"), each under its own time limit. */
      let step = "";
      /** The unfinished line so far, in pieces: a result line can be 40 MB (200,000 tensors). */
      let partial: string[] = [];
      let stderr = "";
      let killedFor: Failure["kind"] | undefined;
      let peakRss = 0;
      let timer: NodeJS.Timeout | undefined;
      const arm = (): void => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          killedFor = "hang";
          child.kill("SIGKILL");
        }, o.timeoutFor?.(current) ?? o.timeoutMs);
      };
      const poll = setInterval(() => {
        const rss = rssOf(child.pid ?? 0);
        peakRss = Math.max(peakRss, rss);
        if (rss > o.rssLimitBytes && current >= 0) {
          killedFor = "memory";
          child.kill("SIGKILL");
        }
      }, 100);
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk: string) => {
        // Only the new chunk is searched for line ends: searching the whole buffer on every chunk
        // was quadratic, over a minute for one 40 MB line, which the time limit took for a hang.
        let from = 0;
        let nl: number;
        while ((nl = chunk.indexOf("\n", from)) >= 0) {
          partial.push(chunk.slice(from, nl));
          const line = partial.join("");
          partial = [];
          from = nl + 1;
          if (line.startsWith("S ")) {
            current = Number(line.slice(2));
            step = "";
            arm();
          } else if (line.startsWith("O ")) {
            step = line.slice(2);
            arm();
          } else if (line.startsWith("R ")) {
            clearTimeout(timer);
            const r = JSON.parse(line.slice(2)) as R;
            results.set(current, r);
            next = current + 1;
            current = -1;
          }
        }
        if (from < chunk.length) partial.push(chunk.slice(from));
      });
      child.stderr.setEncoding("utf8");
      child.stderr.on("data", (chunk: string) => {
        if (stderr.length < 20_000) stderr += chunk;
      });
      child.on("exit", (code, signal) => {
        clearTimeout(timer);
        clearInterval(poll);
        if (current >= 0) {
          const heap = HEAP_EXHAUSTED.test(stderr);
          const kind: Failure["kind"] = killedFor ?? (heap ? "memory" : "crash");
          const at = step ? `${step}: ` : "";
          const why = kind === "hang" ? `${at}no result within ${o.timeoutFor?.(current) ?? o.timeoutMs} ms`
            : kind === "memory" ? `resident ${Math.round(peakRss / 2 ** 20)} MiB (limit ${Math.round(o.rssLimitBytes / 2 ** 20)}), ${heap ? "heap exhausted" : "killed"}`
            : `${at}worker exited with ${signal ?? code}: ${stderr.trim().split("\n").filter((l) => l.trim()).slice(0, 3).join(" | ").slice(0, 400)}`;
          failures.set(current, { kind, detail: why });
          next = current + 1;
        } else if (next < end && code !== 0) {
          // Died between checks, or before the first: count it against the next one.
          failures.set(next, { kind: "crash", detail: `worker exited with ${signal ?? code} between checks: ${stderr.slice(0, 300)}` });
          next++;
        }
        resolve();
      });
    });
  }
}

/** Runs checks 0 .. count-1 of `script` (given `args` before FROM TO), `parallel` workers at a time. */
export async function supervise<R>(script: string, args: readonly string[], count: number, o: SuperviseOptions): Promise<{ results: Map<number, R>; failures: Map<number, Failure> }> {
  const results = new Map<number, R>();
  const failures = new Map<number, Failure>();
  const per = Math.ceil(count / o.parallel);
  const ranges: Promise<void>[] = [];
  for (let from = 0; from < count; from += per) ranges.push(runRange(script, args, from, Math.min(count, from + per), o, results, failures));
  await Promise.all(ranges);
  return { results, failures };
}

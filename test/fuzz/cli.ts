/**
 * The real CLI in a child process, under a time limit and a memory limit (V8's heap limit, and
 * the resident size polled from /proc), classified the way a user would see it: exit 0; a clean
 * error (exit 1 or 74, exactly one line "error: ... (code X)" on stderr, no stack trace); or a
 * crash (any other exit, a signal, a stack trace, several lines), a hang or a memory blow-up; or
 * unsafe output: a control character (other than newline and tab) on stdout or stderr.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { ROOT } from "./seeds.js";
import { HEAP_EXHAUSTED, rssOf } from "./supervise.js";

export interface CliVerdict {
  readonly kind: "ok" | "clean" | "crash" | "hang" | "memory" | "unsafe";
  readonly detail: string;
}

const BIN = join(ROOT, "bin", "tensorcast.js");


/**
 * The CLI's verdict on `args`. A run that does not exit within the limit is run once more with four
 * times the limit and only a second overrun is a hang: on a loaded machine (CI's neighbours, a
 * developer's helpers) a short command can wait seconds for a core, while a real hang never ends.
 */
export async function runCli(args: readonly string[], o: { timeoutMs: number; heapMb: number; rssLimitBytes: number }): Promise<CliVerdict> {
  const first = await runOnce(args, o);
  if (first.kind !== "hang") return first;
  const again = await runOnce(args, { ...o, timeoutMs: 4 * o.timeoutMs });
  return again.kind === "hang" ? { kind: "hang", detail: `no exit within ${o.timeoutMs} ms, nor within ${4 * o.timeoutMs} ms when run again` } : again;
}

function runOnce(args: readonly string[], o: { timeoutMs: number; heapMb: number; rssLimitBytes: number }): Promise<CliVerdict> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [`--max-old-space-size=${o.heapMb}`, BIN, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, TENSORCAST_DEBUG: "" },
    });
    let stderr = "";
    let killedFor: "hang" | "memory" | undefined;
    let peak = 0;
    const timer = setTimeout(() => {
      killedFor = "hang";
      child.kill("SIGKILL");
    }, o.timeoutMs);
    const poll = setInterval(() => {
      peak = Math.max(peak, rssOf(child.pid ?? 0));
      if (peak > o.rssLimitBytes) {
        killedFor = "memory";
        child.kill("SIGKILL");
      }
    }, 100);
    let stdout = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (c: string) => {
      if (stdout.length < 1 << 20) stdout += c;
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (c: string) => {
      if (stderr.length < 20_000) stderr += c;
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      clearInterval(poll);
      if (killedFor === "hang") return resolve({ kind: "hang", detail: `no exit within ${o.timeoutMs} ms` });
      if (killedFor === "memory") return resolve({ kind: "memory", detail: `resident ${Math.round(peak / 2 ** 20)} MiB` });
      const lines = stderr.split("\n").filter((l) => l.trim() !== "");
      if (HEAP_EXHAUSTED.test(stderr)) return resolve({ kind: "memory", detail: lines.slice(0, 2).join(" | ").slice(0, 300) });
      // Control characters from a file (a tensor name) reaching a terminal would be obeyed by it.
      const control = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.exec(stdout + stderr);
      if (control) return resolve({ kind: "unsafe", detail: `prints control character U+${control[0].charCodeAt(0).toString(16).padStart(4, "0")} (exit ${signal ?? code})` });
      if (code === 0) return resolve({ kind: "ok", detail: "" });
      const oneLine = lines.length === 1 && /^error: .*\(code [A-Z_]+\)$/.test(lines[0]) && !/\n\s+at /.test(stderr);
      if ((code === 1 || code === 74) && oneLine) return resolve({ kind: "clean", detail: /\(code ([A-Z_]+)\)$/.exec(lines[0])![1] });
      resolve({ kind: "crash", detail: `exit ${signal ?? code}: ${lines.slice(0, 3).join(" | ").slice(0, 300)}` });
    });
  });
}

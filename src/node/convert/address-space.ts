/**
 * How many more worker threads the process's address-space limit (`ulimit -v`, RLIMIT_AS) leaves
 * room for. A worker whose V8 isolate cannot reserve its memory does not fail: V8 aborts the whole
 * process ("Fatal process OOM in Failed to reserve virtual memory for CodeRange", exit 133) before
 * any handler runs, leaving the output's temporary file behind. So the pool asks before each start.
 *
 * Measured on Node 20.20 (x64 Linux) under `ulimit -v 4000000`: the CLI holds about 1.0 GB of
 * address space before its pool starts; a worker with V8's default code range adds about 600 MB
 * (four fit, a fifth aborts), one with a 32 MiB code range (WORKER_CODE_RANGE_MB) about 110 MB
 * after converting chunks (its WebAssembly memory included: without a limit V8 reserves 10 GB of
 * guard region for it, under one much less). Without the check, two such workers abort under
 * `ulimit -v 1300000` and fit under 1400000.
 */
import { readFileSync } from "node:fs";

/** The code range each conversion worker reserves (V8's default on x64 is about 500 MB more). */
export const WORKER_CODE_RANGE_MB = 32;

/** Address space counted for one more worker: 1.75 times the 110 MB measured. */
export const WORKER_ADDRESS_SPACE = 192 * 1024 * 1024;

/** Address space kept free for the main thread: chunks in flight, its heap's growth. */
export const MAIN_ADDRESS_SPACE = 256 * 1024 * 1024;

/**
 * The soft RLIMIT_AS in bytes from the text of /proc/self/limits, or undefined when there is none
 * ("unlimited") or the text does not say.
 * @example addressSpaceLimit("Max address space         4096000000           unlimited            bytes\n") // 4096000000
 */
export function addressSpaceLimit(limits: string): number | undefined {
  const m = /^Max address space\s+(\S+)/m.exec(limits);
  if (!m || m[1] === "unlimited") return undefined;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/**
 * The address space in use in bytes from the text of /proc/self/status (its VmSize line, in kB).
 * @example addressSpaceUsed("VmPeak:  1100 kB\nVmSize:\t  1024 kB\n") // 1048576
 */
export function addressSpaceUsed(status: string): number | undefined {
  const m = /^VmSize:\s+(\d+)\s*kB/m.exec(status);
  return m ? Number(m[1]) * 1024 : undefined;
}

/**
 * How many more workers fit, `starting` of them already on their way (counted at
 * WORKER_ADDRESS_SPACE each, since their isolates may not have reserved theirs yet): Infinity
 * without a limit, or where /proc does not tell (not Linux).
 * @example workersThatFit(0) // Infinity without `ulimit -v`; 3 under `ulimit -v 2000000` (CLI at 1.0 GB)
 */
export function workersThatFit(starting: number, read: (path: string) => string = (p) => readFileSync(p, "utf8")): number {
  let limit: number | undefined;
  let used: number | undefined;
  try {
    limit = addressSpaceLimit(read("/proc/self/limits"));
    if (limit === undefined) return Infinity;
    used = addressSpaceUsed(read("/proc/self/status"));
  } catch {
    return Infinity;
  }
  if (used === undefined) return Infinity;
  const free = limit - used - MAIN_ADDRESS_SPACE - starting * WORKER_ADDRESS_SPACE;
  return Math.max(0, Math.floor(free / WORKER_ADDRESS_SPACE));
}

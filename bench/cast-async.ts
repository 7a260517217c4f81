/**
 * castAsync throughput against cast and the memory-copy bound (issue 6). Not a test: it prints a table.
 *
 *   npx tsc -p tsconfig.test.json && node --expose-gc build/bench/cast-async.js [--size N] [--reps 7]
 *       [--warmup 1] [--threads N] [--only f32->f16,bf16->f32]
 *
 * Per pair, on the same input (the generators of bench/cast.ts), each contender runs `warmup`
 * untimed repetitions, then `reps` timed ones, interleaved round by round with the other
 * contenders; the table shows the median as elements per second (and a second table the median
 * process CPU time of a call, every thread counted):
 * - "cast": `cast(x, to)` in the calling thread, output allocation included.
 * - "async shared": `await castAsync(x, to)` with `x` already in a SharedArrayBuffer.
 * - "async copied": `await castAsync(x, to)` with `x` in an ordinary ArrayBuffer, so castAsync first
 *   copies it into a SharedArrayBuffer: that copy (allocation included) is timed as part of the call.
 * - "SAB copy ms": that copy alone (allocate a SharedArrayBuffer, `Uint8Array.prototype.set` into it).
 * - "memcpy": `Uint8Array.prototype.set` of (in + out) / 2 bytes per element on one thread, so the copy
 *   reads and writes as many bytes as the cast does; "/mem" is the fraction of its rate reached.
 * Every castAsync result is checked byte for byte against cast's before its row is printed.
 */
import os from "node:os";
import { dtype, type DTypeName, type Storage } from "../src/dtype/table.js";
import { castAsync } from "../src/node/cast-async.js";
import { cast, type CastOptions } from "../src/ops/cast.js";
import { Tensor } from "../src/tensor.js";
import { Rng } from "../test/support/rng.js";

interface Args {
  size: number;
  reps: number;
  warmup: number;
  threads?: number;
  only?: string[];
}

function parseArgs(argv: string[]): Args {
  const a: Args = { size: 16 * 1024 * 1024, reps: 7, warmup: 1 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const count = (): number => {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 0) throw new Error(`${k} needs an integer >= 0`);
      return v;
    };
    switch (k) {
      case "--size": a.size = count(); break;
      case "--reps": a.reps = Math.max(1, count()); break;
      case "--warmup": a.warmup = count(); break;
      case "--threads": a.threads = Math.max(1, count()); break;
      case "--only": a.only = (argv[++i] ?? "").split(","); break;
      default: throw new Error(`unknown argument ${k}`);
    }
  }
  return a;
}

interface Pair {
  name: string;
  from: DTypeName;
  to: DTypeName;
  opts: CastOptions;
}

const PAIRS: Pair[] = [
  { name: "f32->f16", from: "float32", to: "float16", opts: {} },
  { name: "f16->f32", from: "float16", to: "float32", opts: {} },
  { name: "f32->bf16", from: "float32", to: "bfloat16", opts: {} },
  { name: "bf16->f32", from: "bfloat16", to: "float32", opts: {} },
  { name: "f32->float8e4m3fn", from: "float32", to: "float8e4m3fn", opts: {} },
  { name: "float8e4m3fn->f32", from: "float8e4m3fn", to: "float32", opts: {} },
];


/** bench/cast.ts's inputs: float32 with a random sign and mantissa, exponent in [-16, 16]; random codes otherwise. */
function inputFor(t: DTypeName, n: number, rng: Rng, buffer: ArrayBufferLike): Storage {
  switch (t) {
    case "float32": {
      const w = new Uint32Array(buffer, 0, n);
      for (let i = 0; i < n; i++) w[i] = (rng.u32() & 0x807fffff) | ((127 - 16 + (rng.u32() % 33)) << 23);
      return new Float32Array(buffer, 0, n);
    }
    case "float16": case "bfloat16": {
      const a = new Uint16Array(buffer, 0, n);
      for (let i = 0; i < n; i++) a[i] = rng.u32();
      return a;
    }
    case "float8e4m3fn": {
      const a = new Uint8Array(buffer, 0, n);
      for (let i = 0; i < n; i++) a[i] = rng.u32();
      return a;
    }
    default: throw new Error(`no input generator for ${t}`);
  }
}

const gc = (globalThis as { gc?: () => void }).gc;

interface Timing {
  /** Median wall-clock milliseconds. */
  wall: number;
  /** Median process CPU milliseconds (every thread). */
  cpu: number;
}

/**
 * Medians of `reps` timed runs of each contender after `warmup` untimed ones, interleaved (one run
 * of each per round) so that load from other processes falls on all of them alike.
 */
async function timeAll(fns: (() => unknown)[], reps: number, warmup: number): Promise<Timing[]> {
  const wall: number[][] = fns.map(() => []);
  const cpu: number[][] = fns.map(() => []);
  for (let round = 0; round < warmup + reps; round++) {
    for (const [i, fn] of fns.entries()) {
      gc?.();
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await fn();
      const w = performance.now() - t0;
      const c = process.cpuUsage(c0);
      if (round >= warmup) {
        wall[i].push(w);
        cpu[i].push((c.user + c.system) / 1e3);
      }
    }
  }
  return fns.map((_, i) => ({ wall: median(wall[i]), cpu: median(cpu[i]) }));
}

function median(a: number[]): number {
  const s = a.slice().sort((x, y) => x - y);
  return s[s.length >> 1];
}

interface Row {
  pair: string;
  cast: number;
  shared: number;
  copied: number;
  copyMs: number;
  mem: number;
  /** Median process CPU milliseconds (every thread) per call. */
  cpu: { cast: number; shared: number; copied: number };
  matches: boolean;
}

async function runPair(p: Pair, args: Args): Promise<Row> {
  const n = args.size;
  const from = dtype(p.from);
  const to = dtype(p.to);
  const bytesIn = (n * from.bits) / 8;
  const bytesOut = (n * to.bits) / 8;
  const opts = { ...p.opts, ...(args.threads ? { threads: args.threads } : {}) };

  // The same values twice: in an ordinary buffer and in a shared one.
  const plain = Tensor.fromStorage(inputFor(p.from, n, new Rng(0x5eedbe9c), new ArrayBuffer(bytesIn)) as never, from, [n]);
  const shared = Tensor.fromStorage(inputFor(p.from, n, new Rng(0x5eedbe9c), new SharedArrayBuffer(bytesIn)) as never, from, [n]);

  const want = cast(plain, to, p.opts).bytes();
  const a = (await castAsync(shared, to, opts)).bytes();
  const b = (await castAsync(plain, to, opts)).bytes();
  const matches = Buffer.from(a).equals(Buffer.from(want)) && Buffer.from(b).equals(Buffer.from(want));

  const src = plain.bytes();
  const half = Math.round((bytesIn + bytesOut) / 2);
  const memSrc = new Uint8Array(half).fill(1);
  const memDst = new Uint8Array(half);
  const [c, sh, cp, copy, mem] = await timeAll([
    () => cast(plain, to, p.opts),
    () => castAsync(shared, to, opts),
    () => castAsync(plain, to, opts),
    () => new Uint8Array(new SharedArrayBuffer(src.byteLength)).set(src),
    () => memDst.set(memSrc),
  ], args.reps, args.warmup);

  const rate = (ms: number): number => n / ms / 1e3; // million elements per second
  return {
    pair: p.name, cast: rate(c.wall), shared: rate(sh.wall), copied: rate(cp.wall), copyMs: copy.wall, mem: rate(mem.wall),
    cpu: { cast: c.cpu, shared: sh.cpu, copied: cp.cpu }, matches,
  };
}

function fmt(v: number): string {
  return v >= 100 ? v.toFixed(0) : v.toFixed(1);
}

function pct(v: number): string {
  return `${(100 * v).toFixed(v < 0.1 ? 1 : 0)}%`;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const pairs = args.only ? PAIRS.filter((p) => args.only!.includes(p.name)) : PAIRS;
  if (pairs.length === 0) throw new Error(`--only matched no pair; pairs are ${PAIRS.map((p) => p.name).join(", ")}`);
  const load0 = os.loadavg().map((l) => l.toFixed(2)).join(" ");
  const rows: Row[] = [];
  for (const p of pairs) rows.push(await runPair(p, args));
  const load1 = os.loadavg().map((l) => l.toFixed(2)).join(" ");
  const threads = args.threads ?? os.availableParallelism();
  console.log(
    `tensorcast castAsync bench: Node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? "?"}, ` +
      `${threads} threads, ${args.size} elements, median of ${args.reps} after ${args.warmup} warm-up; load average ${load0} -> ${load1}\n`,
  );
  const head = ["pair", "cast M/s", "async shared M/s", "async copied M/s", "SAB copy ms", "memcpy M/s", "shared/cast", "copied/cast", "cast/mem", "shared/mem", "copied/mem"];
  const body = rows.map((r) => [
    r.pair + (r.matches ? "" : " (MISMATCH)"), fmt(r.cast), fmt(r.shared), fmt(r.copied), r.copyMs.toFixed(1), fmt(r.mem),
    `${(r.shared / r.cast).toFixed(2)}x`, `${(r.copied / r.cast).toFixed(2)}x`, pct(r.cast / r.mem), pct(r.shared / r.mem), pct(r.copied / r.mem),
  ]);
  console.log([head, head.map(() => "---"), ...body].map((c) => `| ${c.join(" | ")} |`).join("\n"));
  console.log("\nProcess CPU time per call, ms (every thread: what the speed-up costs in total work):\n");
  const cpuHead = ["pair", "cast", "async shared", "async copied"];
  const cpuBody = rows.map((r) => [r.pair, r.cpu.cast.toFixed(0), r.cpu.shared.toFixed(0), r.cpu.copied.toFixed(0)]);
  console.log([cpuHead, cpuHead.map(() => "---"), ...cpuBody].map((c) => `| ${c.join(" | ")} |`).join("\n"));
  if (rows.some((r) => !r.matches)) process.exitCode = 1;
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});

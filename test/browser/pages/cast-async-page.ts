/**
 * Runs inside each browser engine (test/browser/cast-async.test.ts serves it): tensorcast/web's
 * castAsync and castIntoAsync against `cast` in the same page, on Web Workers, and castIntoAsync
 * within a shared arena (createArena(…, { shared: true })). Returns what it found
 * rather than throwing, so the Node side can report every difference at once.
 */
import {
  cast, createArena, dequantizeLinear, DTYPES, dtype, quantizeLinear, Tensor, TensorcastError, type CastOptions, type DType, type DTypeName,
} from "../../../src/index.js";
import {
  castAsync, castIntoAsync, closeCastAsyncPool, quantizeThreadChunks, setCastWorkerUrl, sharedZeros, useQuantizeThread, type CastAsyncOptions,
} from "../../../src/web/index.js";
import { TYPED_ARRAYS } from "../../../src/tensor.js";
import { arenaView, everyCodeBytes, optionSets, randomPatterns, randomTensor, writtenOutside } from "../../support/cast-inputs.js";
import { Rng } from "../../support/rng.js";
// Types only (erased): the recorder is a script engines.ts puts in the page.
import type { RecordedWorker } from "../engines.js";

const NUMERIC = DTYPES.filter((t) => t.kind !== "string" && t.kind !== "complex");

export interface PageReport {
  readonly isolated: boolean;
  readonly hardwareConcurrency: number;
  /** castAsync / castIntoAsync calls compared with cast. */
  readonly compared: number;
  /** Of those, how many returned storage on a SharedArrayBuffer (the split path). */
  readonly split: number;
  readonly failures: string[];
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

function isShared(t: Tensor): boolean {
  return typeof SharedArrayBuffer === "function" && (t.data as Uint8Array).buffer instanceof SharedArrayBuffer;
}

class Checker {
  compared = 0;
  split = 0;
  readonly failures: string[] = [];

  /** `split`: whether the call should have gone to the workers (false: cast in the calling thread), or undefined: not checked. */
  same(got: Tensor, want: Tensor, what: string, split?: boolean): void {
    this.compared++;
    if (isShared(got)) this.split++;
    if (split !== undefined && isShared(got) !== split) this.failures.push(`${what}: ${split ? "not split" : "split"}`);
    if (got.dtype !== want.dtype || got.shape.join() !== want.shape.join()) this.failures.push(`${what}: type or shape differs`);
    else if (!sameBytes(got.bytes(), want.bytes())) this.failures.push(`${what}: bytes differ from cast()`);
  }

  report(): PageReport {
    return {
      isolated: (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true,
      hardwareConcurrency: (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 0,
      compared: this.compared,
      split: this.split,
      failures: this.failures,
    };
  }
}

/** Every numeric pair and option set, odd sizes, two and three threads, then castIntoAsync, large tensors, errors. */
export async function runCastAsyncChecks(): Promise<PageReport> {
  const c = new Checker();
  for (const [i, from] of NUMERIC.entries()) {
    const size = 8 * 301 + 1 + (i % 7);
    const x = randomTensor(from, size, 100 + i);
    const before = x.bytes().slice();
    for (const to of NUMERIC) {
      for (const opts of optionSets(to)) {
        const what = `${from.name} -> ${to.name} ${JSON.stringify(opts)}`;
        c.same(await castAsync(x, to, { ...opts, minElements: 0, threads: 2 + (i % 2) }), cast(x, to, opts), what, from !== to);
      }
    }
    if (!sameBytes(x.bytes(), before)) c.failures.push(`${from.name}: the input was changed`);
  }
  for (const [i, from] of NUMERIC.entries()) {
    for (const [j, to] of NUMERIC.entries()) {
      if ((i + j) % 3 !== 0) continue;
      const size = 8 * 211 + 3 + (j % 5);
      const x = randomTensor(from, size, 300 + i, j % 2 === 0);
      const out = randomTensor(to, size, 900 + j, true);
      const got = await castIntoAsync(x, out, { minElements: 0, threads: 2 });
      if (got !== out) c.failures.push(`castIntoAsync ${from.name} -> ${to.name}: did not resolve to out`);
      c.same(out, cast(x, to), `castIntoAsync ${from.name} -> ${to.name}`);
    }
  }
  // Large tensors, default threads and threshold; the input ordinary and shared.
  for (const [from, to] of [["float32", "float16"], ["bfloat16", "float32"], ["float32", "float8e4m3fn"], ["float64", "uint4"]] as const) {
    const t = NUMERIC.find((d) => d.name === from)!;
    const x = randomTensor(t, (1 << 20) + 4099, 7);
    const xs = randomTensor(t, (1 << 20) + 4099, 7, true);
    const want = cast(x, to);
    c.same(await castAsync(x, to), want, `large ${from} -> ${to}`, true);
    c.same(await castAsync(xs, to, { threads: 2 }), want, `large ${from} -> ${to}, shared input`, true);
    const out = sharedZeros(to, x.shape);
    c.same(await castIntoAsync(x, out), want, `large ${from} -> ${to} into sharedZeros`);
  }
  // Boundaries and more threads than cores.
  for (const size of [16, 17, 25, 33, 1000, 4096 * 3 + 5]) {
    const x = randomTensor(NUMERIC.find((d) => d.name === "float32")!, size, size);
    for (const threads of [2, 4, 5]) c.same(await castAsync(x, "float6e2m3", { threads, minElements: 0 }), cast(x, "float6e2m3"), `n=${size} threads=${threads}`, true);
  }
  await errorsMatch(c);
  return c.report();
}

/** castAsync rejects with the TensorcastError cast throws. */
async function errorsMatch(c: Checker): Promise<void> {
  const x = randomTensor(NUMERIC.find((d) => d.name === "float32")!, 100_000, 9);
  const cases: [string, unknown, unknown][] = [
    ["complex target", "complex64", {}], ["unknown type", "float12", {}], ["float8 before Cast-19", "float8e4m3fn", { opset: 18 }],
    ["bad saturate", "float8e4m3fn", { saturate: "no" }], ["unknown option", "float16", { saturation: false }],
    ["bad threads", "float16", { threads: 0 }],
  ];
  for (const [what, to, opts] of cases) {
    let want: unknown;
    try {
      if (what === "bad threads") throw new TensorcastError("INVALID_ATTRIBUTE", "threads must be an integer >= 1, got 0");
      cast(x, to as never, opts as CastOptions);
    } catch (e) {
      want = e;
    }
    try {
      await castAsync(x, to as never, { minElements: 0, ...(opts as object) } as CastAsyncOptions);
      c.failures.push(`${what}: castAsync resolved`);
    } catch (e) {
      const w = want as TensorcastError;
      if (!(e instanceof TensorcastError) || e.code !== w.code || e.message !== w.message) {
        c.failures.push(`${what}: rejected with ${String(e)}, cast threw ${String(want)}`);
      }
    }
  }
}

/**
 * In a page without cross-origin isolation (no SharedArrayBuffer): castAsync and castIntoAsync give
 * cast's bytes on ordinary memory, the ranges copied to the workers and back, and the page's event
 * loop keeps turning meanwhile (timer ticks counted during one large castAsync; cast allows none).
 */
export async function runWithoutIsolation(): Promise<PageReport & { sharedZerosError: string; ticks: number }> {
  const c = new Checker();
  for (const to of ["float16", "float8e5m2", "uint4", "float32", "int64"] as const) {
    const x = randomTensor(NUMERIC.find((d) => d.name === "bfloat16")!, (1 << 20) + 3, 5);
    c.same(await castAsync(x, to, { threads: 2 }), cast(x, to), `bfloat16 -> ${to}`, false);
    const out = randomTensor(NUMERIC.find((d) => d.name === to)!, x.size, 6);
    c.same(await castIntoAsync(x, out, { threads: 2, minElements: 0 }), cast(x, to), `castIntoAsync bfloat16 -> ${to}`);
  }
  for (const [i, from] of NUMERIC.entries()) {
    const x = randomTensor(from, 8 * 401 + 1 + (i % 7), 700 + i);
    for (const to of NUMERIC) {
      if (to !== from) c.same(await castAsync(x, to, { minElements: 0, threads: 3 }), cast(x, to), `${from.name} -> ${to.name} copied`, false);
    }
  }
  let sharedZerosError = "";
  try {
    sharedZeros("float16", [4]);
  } catch (e) {
    sharedZerosError = e instanceof TensorcastError ? `${e.code}: ${e.message}` : String(e);
  }
  const big = randomTensor(NUMERIC.find((d) => d.name === "float32")!, 1 << 22, 8);
  let y: Tensor | undefined;
  const ticks = await ticksDuring(async () => {
    y = await castAsync(big, "float16", { threads: 2 });
  });
  c.same(y!, cast(big, "float16"), "4 Mi float32 -> float16 while timers tick", false);
  return { ...c.report(), sharedZerosError, ticks };
}

/** Timer ticks while `run` is awaited: how often the page's event loop turned meanwhile. */
async function ticksDuring(run: () => Promise<unknown>): Promise<number> {
  let ticks = 0;
  let ticking = true;
  const tick = (): void => {
    if (!ticking) return;
    ticks++;
    setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  await run();
  ticking = false;
  return ticks;
}

/** Cross-origin isolated, `callerConverts: false`: the page only hands out ranges, and its event loop keeps turning. */
export async function runCallerIdle(): Promise<PageReport & { ticks: number }> {
  const c = new Checker();
  const big = randomTensor(NUMERIC.find((d) => d.name === "float32")!, 1 << 22, 8);
  const want = cast(big, "float16");
  let y: Tensor | undefined;
  const ticks = await ticksDuring(async () => {
    y = await castAsync(big, "float16", { threads: 2, callerConverts: false });
  });
  c.same(y!, want, "4 Mi float32 -> float16, callerConverts false", true);
  const out = sharedZeros("bfloat16", big.shape);
  c.same(await castIntoAsync(big, out, { threads: 3, callerConverts: false }), cast(big, "bfloat16"), "castIntoAsync, callerConverts false");
  return { ...c.report(), ticks };
}

export interface QuantThreadReport {
  readonly isolated: boolean;
  /** Chunks the helper Web Worker ran. */
  readonly chunks: number;
  /** Rounds of every case, each compared with the one-thread bytes. */
  readonly rounds: number;
  readonly failures: string[];
}

/**
 * useQuantizeThread in the page: quantize (int8 per tensor, int4 blocked by 32, uint8 per axis
 * with rows of 4,099) and dequantize, compared with the bytes the same calls give on one thread,
 * in rounds until the helper has run chunks (at most 10 s: it starts while the page waits).
 */
export async function runQuantThreadChecks(): Promise<QuantThreadReport> {
  const rng = new Rng(25);
  const floats = (n: number): Tensor => {
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = Math.fround(((rng.u32() >>> 0) / 4294967296 - 0.5) * 30);
    return Tensor.fromStorage(v, "float32", [n]);
  };
  const x = floats(1 << 20);
  const grid = Tensor.fromStorage(x.data as Float32Array, "float32", [512, 2048]);
  const rows = Tensor.fromStorage(floats(160 * 4099).data as Float32Array, "float32", [160, 4099]);
  const blockScales = Tensor.fromStorage(Float32Array.from({ length: 512 * 64 }, (_, i) => 0.5 + (i % 11) * 0.25), "float32", [512, 64]);
  const rowScales = Tensor.fromStorage(Float32Array.from({ length: 160 }, (_, i) => 0.05 + i * 0.001), "float32", [160]);
  const calls: [string, () => Tensor][] = [
    ["int8 per tensor", () => quantizeLinear(x, Tensor.fromStorage(Float32Array.of(0.11), "float32", []))],
    ["int4 blocked by 32", () => quantizeLinear(grid, blockScales, undefined, { axis: 1, blockSize: 32, outputDtype: "int4" })],
    ["uint8 per axis, rows of 4,099", () => quantizeLinear(rows, rowScales, Tensor.fromValues(Array.from({ length: 160 }, (_, i) => i), "uint8", [160]), { axis: 0 })],
    ["int4 blocked by 32, back", () => dequantizeLinear(quantizeLinear(grid, blockScales, undefined, { axis: 1, blockSize: 32, outputDtype: "int4" }), blockScales, undefined, { axis: 1, blockSize: 32 })],
  ];
  const want = calls.map(([, f]) => f().bytes().slice());
  const failures: string[] = [];
  useQuantizeThread(true);
  let rounds = 0;
  try {
    for (const t0 = performance.now(); rounds === 0 || (quantizeThreadChunks() === 0 && performance.now() - t0 < 10_000); rounds++) {
      calls.forEach(([name, f], i) => {
        if (!sameBytes(f().bytes(), want[i])) failures.push(`${name} (round ${rounds}): differs from the one-thread bytes`);
      });
      await new Promise((r) => setTimeout(r, 50));
    }
    const chunks = quantizeThreadChunks();
    return { isolated: (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true, chunks, rounds, failures };
  } finally {
    useQuantizeThread(false);
  }
}

/** With the worker's script unreachable: castAsync rejects with WORKER_FAILED; with it back, castAsync works again. */
export async function runWorkerFailure(badUrl: string): Promise<{ error: string; after: PageReport }> {
  const x = randomTensor(NUMERIC.find((d) => d.name === "float32")!, 50_000, 12);
  await setCastWorkerUrl(badUrl);
  let error = "resolved";
  try {
    await castAsync(x, "float16", { threads: 2, minElements: 0 });
  } catch (e) {
    error = e instanceof TensorcastError ? `${e.code}: ${e.message}` : String(e);
  }
  await setCastWorkerUrl(undefined);
  const c = new Checker();
  c.same(await castAsync(x, "float16", { threads: 2, minElements: 0 }), cast(x, "float16"), "after the failure", true);
  await closeCastAsyncPool();
  c.same(await castAsync(x, "bfloat16", { threads: 2, minElements: 0 }), cast(x, "bfloat16"), "after closing the pool", true);
  return { error, after: c.report() };
}

// ---- Shared arenas ------------------------------------------------------------------------------

interface RecordedGlobals {
  castWorkers?: RecordedWorker[];
  castMemoriesSent?: { worker: number; memory: { buffer: ArrayBufferLike } }[];
}

const recorded = globalThis as RecordedGlobals;

/** The recorder's tallies now, copied. */
function snapshot(): RecordedWorker[] {
  return JSON.parse(JSON.stringify(recorded.castWorkers ?? [])) as RecordedWorker[];
}

/**
 * What the recorder tallied in `field` since `before`, summed over the workers: requests posted by
 * kind, or the probe worker's answers by value (resident-probe-worker.ts).
 */
function tallySince(before: readonly RecordedWorker[], field: "posted" | "probes"): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const [i, w] of (recorded.castWorkers ?? []).entries()) {
    for (const [key, n] of Object.entries(w[field])) {
      const d = n - (before[i]?.[field][key] ?? 0);
      if (d > 0) sum[key] = (sum[key] ?? 0) + d;
    }
  }
  return sum;
}

/** The pairs whose WebAssembly kernel runs in place on a shared arena's memory in every thread (kernelFor, sharedResidentOf). */
const RESIDENT_PAIRS: readonly (readonly [DTypeName, DTypeName])[] = [
  ["float32", "float16"], ["float32", "bfloat16"], ["float16", "float32"], ["bfloat16", "float32"],
  ["float32", "int8"], ["float32", "uint8"], ["float64", "float32"], ["int64", "int32"],
];
/**
 * 8-bit float sources to float32: their kernel (byte_lut32) reads a table at one address of the
 * memory, so sharedResidentOf keeps them off the resident path (threads casting other pairs would
 * overwrite it); in a shared arena they split as ranges on shared memory, read where they are.
 */
const TABLE_PAIRS: readonly (readonly [DTypeName, DTypeName])[] = [
  ["float8e4m3fn", "float32"], ["float8e4m3fnuz", "float32"], ["float8e5m2", "float32"], ["float8e5m2fnuz", "float32"], ["float8e8m0", "float32"],
];

/** float32 values where a narrowing cast rounds, overflows, ties or truncates at a boundary, as bit patterns. */
const F32_EDGES = [
  0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0x7fbfffff, 0xffc12345, 0x7f7fffff, 0xff7fffff,
  0x00000001, 0x80000001, 0x007fffff, 0x00800000,
  0x477fe000, 0x477fefff, 0x477ff000, 0xc77ff000, 0x33800000, 0x33000000, 0x33000001, 0x387fc000, 0x38800000, // float16 max, rounding to Inf, min subnormal and its half
  0x3f808000, 0x3f818000, 0x3f80c000, 0x7f7f8000, 0x7f7fffff, // bfloat16 ties to even, rounding to Inf
  0x42fe0000, 0x42ff0000, 0x43000000, 0xc3000000, 0xc3008000, 0x437f0000, 0x43800000, 0xbf7fffff, 0x3f7fffff, 0x4f000000, 0xcf000000, 0x5f000000, // int8 / uint8 limits
];
/** float64 values around float32's limits and double-rounding cases, as [high, low] words. */
const F64_EDGES: readonly [number, number][] = [
  [0, 0], [0x80000000, 0], [0x7ff00000, 0], [0xfff00000, 0], [0x7ff80000, 0], [0xfff80000, 1], [0x7ff00000, 1],
  [0x47efffff, 0xe0000000], [0x47efffff, 0xf0000000], [0x47efffff, 0xefffffff], [0xc7efffff, 0xf0000000], // float32 max, its rounding edge
  [0x36a00000, 0], [0x36a00000, 1], [0x36900000, 0], [0x36900000, 1], [0x38100000, 0], [0x380fffff, 0xffffffff], // 2^-149, its half and above, 2^-126 and below
  [0x3ff00000, 0x10000000], [0x3ff00000, 0x30000000], [0x3ff00000, 0x10000001], [0x3ff00000, 0x0fffffff], // ties to even and near-ties
];
/** int64 values where keeping the low 32 bits matters. */
const I64_EDGES = [0n, -1n, 2147483647n, 2147483648n, -2147483648n, -2147483649n, 4294967295n, 4294967296n, 4294967301n, 9223372036854775807n, -9223372036854775808n];

/** The input bytes for a pair: every code of a 16- or 8-bit source (8-bit ones repeated), else edge values then random patterns. */
function arenaInput(from: DType, rng: Rng): Uint8Array {
  if (from.bits === 16) {
    // Every code, then 7 more so that the last group is partial.
    const bytes = new Uint8Array((65536 + 7) * 2);
    bytes.set(everyCodeBytes(16));
    bytes.set(everyCodeBytes(16).subarray(0, 14), 65536 * 2);
    return bytes;
  }
  if (from.bits === 8) {
    const bytes = new Uint8Array(256 * 197 + 3);
    for (let i = 0; i < bytes.length; i++) bytes[i] = i & 0xff;
    return bytes;
  }
  const n = 100_003;
  const bytes = randomPatterns(from, n, rng).slice();
  if (from.name === "float32") new Uint32Array(bytes.buffer).set(F32_EDGES);
  else if (from.name === "float64") new Uint32Array(bytes.buffer).set(F64_EDGES.flatMap(([hi, lo]) => [lo, hi]));
  else if (from.name === "int64") new BigInt64Array(bytes.buffer).set(I64_EDGES);
  return bytes;
}

/** A tensor of `t` over `bytes`, in ordinary memory. */
function ordinary(t: DType, bytes: Uint8Array): Tensor {
  const n = bytes.byteLength / (t.bits / 8);
  const storage = new TYPED_ARRAYS[t.array as keyof typeof TYPED_ARRAYS](bytes.slice().buffer, 0, n);
  return Tensor.fromStorage(storage as never, t, [n]);
}

const GUARD = 0xa5;

export interface ArenaReport extends PageReport {
  /** castIntoAsync calls within the arena. */
  readonly calls: number;
  /** Resident requests posted, per worker, and how many carried the arena's memory. */
  readonly residentPerWorker: number[];
  readonly memoriesPerWorker: number[];
  readonly workers: number;
  readonly resetError: string;
  /** The probe worker's answers to resident requests, by value ("in place", "copied", "skipped"). */
  readonly probes: Record<string, number>;
}

/**
 * In a cross-origin isolated page: a shared arena, inputs placed with `arena.from`, outputs with
 * `arena.zeros` or as views between guard bytes; castIntoAsync on 3 threads (2 workers), once with
 * the page converting nothing (`callerConverts: false`: every byte is the workers' doing) and once
 * with it converting too. Every output equals cast()'s. What was posted to the workers shows the
 * way the work went: each resident-pair call is exactly one "resident" request per worker and no
 * range of data, the arena's memory sent to each worker once (its buffer the arena's own); the
 * 8-bit table pairs go as ranges on shared memory; a second arena, then the first again, are sent
 * anew. The workers run resident-probe-worker.js (the
 * real worker, each answer to a resident request saying whether that thread converted in place).
 * Then reset() is refused, every view intact.
 */
export async function runSharedArenaChecks(): Promise<ArenaReport> {
  await setCastWorkerUrl(new URL("./resident-probe-worker.js", import.meta.url).href);
  try {
    return await sharedArenaChecks();
  } finally {
    await setCastWorkerUrl(undefined);
  }
}

async function sharedArenaChecks(): Promise<ArenaReport> {
  const c = new Checker();
  const rng = new Rng(16);
  const pairs = [...RESIDENT_PAIRS, ...TABLE_PAIRS].map(([f, t]) => [dtype(f), dtype(t)] as const);
  const inputs = pairs.map(([from]) => arenaInput(from, rng));
  const bytesNeeded = pairs.reduce((sum, [from, to], i) => sum + inputs[i]!.byteLength * (1 + 2 * (to.bits / from.bits)) + 4096, 0);
  const arena = createArena(bytesNeeded + (4 << 20), { shared: true });
  if (!arena.shared || !arena.inPlace) c.failures.push(`arena: shared ${arena.shared}, inPlace ${arena.inPlace}`);
  let calls = 0;
  const held: { x: Tensor; bytes: Uint8Array }[] = [];
  for (const [i, [from, to]] of pairs.entries()) {
    const resident = i < RESIDENT_PAIRS.length;
    const x = arena.from(ordinary(from, inputs[i]!));
    if (!isShared(x)) c.failures.push(`${from.name}: arena.from did not place it on shared memory`);
    held.push({ x, bytes: x.bytes().slice() });
    const want = cast(ordinary(from, inputs[i]!), to);
    for (const callerConverts of [false, true]) {
      const what = `${from.name} -> ${to.name} in a shared arena, callerConverts ${callerConverts}`;
      // With the page converting too, the output ends mid-cache-line between GUARD bytes.
      const guarded = callerConverts ? arenaView(arena, to, x.size, 65 + (i % 5), 63 - (i % 5), GUARD) : undefined;
      const out = guarded?.view ?? arena.zeros(to.name, x.shape);
      const before = snapshot();
      const got = await castIntoAsync(x, out, { threads: 3, callerConverts, minElements: 0 });
      calls++;
      if (got !== out) c.failures.push(`${what}: did not resolve to out`);
      c.same(out, want, what, true);
      if (guarded && writtenOutside(guarded, GUARD) !== undefined) c.failures.push(`${what}: a byte outside the output was written`);
      const kinds = tallySince(before, "posted");
      const perWorker = (recorded.castWorkers ?? []).map((w, k) => (w.posted.resident ?? 0) - (before[k]?.posted.resident ?? 0));
      // Only a call whose page converted nothing waited for every worker's answer.
      const probes = tallySince(before, "probes");
      if (probes.copied || (resident && !callerConverts && probes["in place"] !== 2)) c.failures.push(`${what}: the workers answered ${JSON.stringify(probes)}, want 2 in place`);
      const expected = resident ? { resident: 2 } : undefined;
      if (expected) {
        if (JSON.stringify(kinds) !== JSON.stringify(expected)) c.failures.push(`${what}: posted ${JSON.stringify(kinds)}, want one resident request per worker`);
        else if (perWorker.filter((n) => n === 1).length !== 2) c.failures.push(`${what}: resident requests per worker ${JSON.stringify(perWorker)}`);
      } else if (!(kinds.shared! > 0) || Object.keys(kinds).length !== 1) {
        c.failures.push(`${what}: posted ${JSON.stringify(kinds)}, want ranges on shared memory only`);
      }
    }
  }
  // A second arena, then the first again: each time the workers are sent that arena's memory anew.
  const other = createArena(4 << 20, { shared: true });
  for (const [k, a] of [other, arena].entries()) {
    const x = a.from(ordinary(dtype("float32"), inputs[0]!));
    const before = snapshot();
    c.same(await castIntoAsync(x, a.zeros("float16", x.shape), { threads: 3, callerConverts: false, minElements: 0 }), cast(x, "float16"), `arena ${k + 2}`, true);
    calls++;
    if (tallySince(before, "probes")["in place"] !== 2) c.failures.push(`arena ${k + 2}: the workers answered ${JSON.stringify(tallySince(before, "probes"))}`);
  }
  for (const { x, bytes } of held) if (!sameBytes(x.bytes(), bytes)) c.failures.push(`${x.dtype.name}: the input in the arena was changed`);
  const workers = recorded.castWorkers ?? [];
  const sent = recorded.castMemoriesSent ?? [];
  // Each worker: this arena's memory, the other's, this one's again.
  const buffers = [arena, other, arena].map((a) => (a.zeros("uint8", [1]).data as Uint8Array).buffer);
  for (const w of workers.keys()) {
    const mine = sent.filter((s) => s.worker === w).map((s) => s.memory.buffer);
    if (mine.length !== buffers.length || mine.some((b, k) => b !== buffers[k])) c.failures.push(`worker ${w} was not sent the arenas' memories in the order they were used`);
  }
  let resetError = "reset() returned";
  try {
    arena.reset();
  } catch (e) {
    resetError = e instanceof TensorcastError ? `${e.code}: ${e.message}` : String(e);
  }
  for (const { x, bytes } of held) if (x.disposed || !sameBytes(x.bytes(), bytes)) c.failures.push(`${x.dtype.name}: not intact after reset() was refused`);
  return {
    ...c.report(), calls, workers: workers.length, resetError,
    residentPerWorker: workers.map((w) => w.posted.resident ?? 0), memoriesPerWorker: workers.map((w) => w.memories),
    probes: tallySince([], "probes"),
  };
}

/** createArena(…, { shared: true }) where the page has no shared memory: the error, as "CODE: message". */
export function sharedArenaError(): string {
  try {
    createArena(1 << 16, { shared: true });
    return "created";
  } catch (e) {
    return e instanceof TensorcastError ? `${e.code}: ${e.message}` : String(e);
  }
}

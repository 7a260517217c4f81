/**
 * Runs inside each browser engine (test/browser/cast-async.test.ts serves it): tensorcast/web's
 * castAsync and castIntoAsync against `cast` in the same page, on Web Workers. Returns what it found
 * rather than throwing, so the Node side can report every difference at once.
 */
import { cast, DTYPES, Tensor, TensorcastError, type CastOptions, type DType } from "../../../src/index.js";
import {
  castAsync, castIntoAsync, closeCastAsyncPool, setCastWorkerUrl, sharedZeros, type CastAsyncOptions,
} from "../../../src/web/index.js";
import { optionSets, randomTensor } from "../../support/cast-inputs.js";

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

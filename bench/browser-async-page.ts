/**
 * Runs inside a cross-origin isolated Chromium page (bench/browser-async.ts serves it): cast,
 * castInto, and tensorcast/web's castAsync / castIntoAsync on Web Workers, against a memory copy of
 * the same bytes, contenders interleaved round by round. Returns milliseconds; checks every
 * contender's bytes against cast's.
 */
import { dtype, type DTypeName } from "../src/dtype/table.js";
import { u8View } from "../src/kernels/fast/views.js";
import { cast, castInto } from "../src/ops/cast.js";
import { Tensor } from "../src/tensor.js";
import { castAsync, castIntoAsync, sharedZeros } from "../src/web/index.js";
import { Rng } from "../test/support/rng.js";
import { inputFor, median } from "./inputs.js";

export interface AsyncBenchOptions {
  readonly n: number;
  readonly reps: number;
  readonly warmup: number;
  readonly threads: number;
  readonly pairs: readonly (readonly [DTypeName, DTypeName])[];
}

export interface AsyncBenchRow {
  readonly from: DTypeName;
  readonly to: DTypeName;
  /** Median milliseconds per contender (same order as CONTENDERS). */
  readonly ms: Record<string, number>;
  /** Contenders whose bytes differ from cast's (should be none). */
  readonly wrong: string[];
}

export const CONTENDERS = ["cast()", "castInto", "castAsync", "castIntoAsync", "castIntoAsync shared-in", "memcpy"] as const;

declare const performance: { now(): number };

export async function runAsyncBench(o: AsyncBenchOptions): Promise<{ rows: AsyncBenchRow[]; isolated: boolean; cores: number }> {
  const g = globalThis as { gc?: () => void; crossOriginIsolated?: boolean; navigator?: { hardwareConcurrency?: number } };
  const rows: AsyncBenchRow[] = [];
  for (const [from, to] of o.pairs) {
    const x = Tensor.fromStorage(inputFor(from, o.n, new Rng(1)) as never, from, [o.n]);
    // Without cross-origin isolation there is no shared memory: the castIntoAsync contenders write
    // into an ordinary output (ranges copied to the workers and back), and "shared-in" is skipped.
    const isolated = g.crossOriginIsolated === true;
    const xs = isolated ? sharedZeros(from, [o.n]) : x;
    if (isolated) u8View(xs.data).set(u8View(x.data));
    const out = Tensor.zeros(to, [o.n]);
    const sharedOut = isolated ? sharedZeros(to, [o.n]) : Tensor.zeros(to, [o.n]);
    const want = cast(x, to).bytes();
    // A copy that reads and writes as many bytes as the cast: (in + out) / 2 per element.
    const copyBytes = (o.n * (dtype(from).bits + dtype(to).bits)) / 16;
    const copySrc = new Uint8Array(copyBytes).fill(1);
    const copyDst = new Uint8Array(copyBytes);
    const opts = { threads: o.threads, minElements: 0 };
    const runs: Record<string, () => Promise<Uint8Array>> = {
      "cast()": async () => cast(x, to).bytes(),
      castInto: async () => castInto(x, out).bytes(),
      castAsync: async () => (await castAsync(x, to, opts)).bytes(),
      castIntoAsync: async () => (await castIntoAsync(x, sharedOut, opts)).bytes(),
      "castIntoAsync shared-in": async () => (await castIntoAsync(xs, sharedOut, opts)).bytes(),
      memcpy: async () => {
        copyDst.set(copySrc);
        return want;
      },
    };
    const times: Record<string, number[]> = Object.fromEntries(CONTENDERS.map((c) => [c, []]));
    const wrong = new Set<string>();
    for (let round = 0; round < o.warmup + o.reps; round++) {
      for (const c of CONTENDERS) {
        if (c === "castIntoAsync shared-in" && !isolated) continue;
        g.gc?.();
        const t0 = performance.now();
        const got = await runs[c]();
        const ms = performance.now() - t0;
        if (round >= o.warmup) times[c].push(ms);
        if (round === 0 && !sameBytes(got, want)) wrong.add(c);
      }
    }
    rows.push({ from, to, ms: Object.fromEntries(CONTENDERS.map((c) => [c, times[c].length ? median(times[c]) : NaN])), wrong: [...wrong] });
  }
  return { rows, isolated: g.crossOriginIsolated === true, cores: g.navigator?.hardwareConcurrency ?? 0 };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

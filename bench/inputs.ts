/**
 * The benchmarks' inputs and statistics, shared so that every bench measures the same data:
 * deterministic (xorshift with a fixed seed), drawn as a model's tensors would be.
 */
import type { DTypeName, Storage } from "../src/dtype/table.js";
import { cast } from "../src/ops/cast.js";
import { Tensor } from "../src/tensor.js";
import type { Rng } from "../test/support/rng.js";

/** float32: random sign and mantissa, exponent uniform in [-16, 16]. */
function float32Input(n: number, rng: Rng): Float32Array {
  const w = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const u = rng.u32();
    w[i] = (u & 0x807fffff) | ((127 - 16 + (rng.u32() % 33)) << 23);
  }
  return new Float32Array(w.buffer);
}

/**
 * `n` elements of type `t`: float32 as above; float64 the same values nudged off float32; every
 * 16-bit or 8-bit code uniformly for float16, bfloat16 and float8e4m3fn; random words for int64;
 * for strings, what tensorcast prints for random float32 values.
 */
export function inputFor(t: DTypeName, n: number, rng: Rng): Storage {
  switch (t) {
    case "float32": return float32Input(n, rng);
    case "float64": return Float64Array.from(float32Input(n, rng), (x) => x * (1 + (x % 1e-3))); // not all exact in f32
    case "float16": case "bfloat16": {
      const a = new Uint16Array(n);
      for (let i = 0; i < n; i++) a[i] = rng.u32();
      return a;
    }
    case "float8e4m3fn": {
      const a = new Uint8Array(n);
      for (let i = 0; i < n; i++) a[i] = rng.u32();
      return a;
    }
    case "int64": {
      const w = new Uint32Array(2 * n);
      for (let i = 0; i < 2 * n; i++) w[i] = rng.u32();
      return new BigInt64Array(w.buffer);
    }
    case "string": {
      const x = Tensor.fromStorage(float32Input(n, rng), "float32", [n]);
      return cast(x, "string").data;
    }
    default: throw new Error(`no input generator for ${t}`);
  }
}

/**
 * float16 codes of values like a model's weights: normally distributed, mean 0, standard deviation
 * 0.02 (Box-Muller on the generator; rounded by tensorcast's own float32 -> float16). About 0.2% of
 * them are float16 subnormals, against 3% of uniformly drawn codes.
 */
export function float16Weights(n: number, rng: Rng): Uint16Array {
  const f = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const u = (rng.u32() + 1) / 2 ** 32;
    const v = rng.u32() / 2 ** 32;
    f[i] = 0.02 * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
  return cast(Tensor.fromStorage(f, "float32", [n]), "float16").data as Uint16Array;
}

export function median(a: number[]): number {
  const s = a.slice().sort((x, y) => x - y);
  return s[s.length >> 1];
}

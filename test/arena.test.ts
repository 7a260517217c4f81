/**
 * Arenas (src/arena.ts) and the in-place kernels behind them (src/kernels/wasm/resident.ts):
 * - every pair with a WebAssembly kernel, cast in place between tensors of one arena, gives the
 *   bytes of castReference: every code of the 16- and 8-bit sources (under every option set for
 *   the 8-bit table kernel), random bit patterns beyond, counts around the kernels' groups, with
 *   the relaxed-SIMD build and the plain one;
 * - outputs that are views a user made into the middle of arena memory: nothing outside the
 *   output's own bytes is written (the kernels' last group would overrun it), inputs at odd offsets;
 * - an arena input with an ordinary output and the reverse, and two arenas: cast()'s bytes;
 * - a full arena (ARENA_FULL, nothing allocated, still usable), a refused arena.cast allocates
 *   nothing, bad sizes and string types refused;
 * - reset(): every view a user holds is detached (reads as empty), so the bytes handed out next are
 *   never visible through it; old tensors are refused as disposed; zeros() after reset are zeros;
 * - dispose() of an arena tensor is a no-op that leaves its bytes and its neighbours' alone.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createArena, type Arena } from "../src/arena.js";
import { dtype, DTYPES, type DType, type DTypeName } from "../src/dtype/table.js";
import { castReference, type ResolvedCastOptions } from "../src/kernels/reference.js";
import { useWasmBuild, wasmAvailable } from "../src/kernels/wasm/index.js";
import { residentCast } from "../src/kernels/wasm/resident.js";
import { cast, castInto } from "../src/ops/cast.js";
import { pooledStorageBytes } from "../src/storage-pool.js";
import { Tensor, TYPED_ARRAYS } from "../src/tensor.js";
import { TensorcastError } from "../src/errors.js";
import { throwsCode } from "./support/assertions.js";
import { arenaView, everyCodeBytes, randomPatterns, storageBytes, writtenOutside } from "./support/cast-inputs.js";
import { Rng } from "./support/rng.js";

const OPTS: ResolvedCastOptions = { saturate: true, roundMode: "up" };

/** The pairs resident.ts runs in place (besides the 8-bit table kernel). */
const PAIRS: [DTypeName, DTypeName][] = [
  ["float32", "float16"], ["float32", "bfloat16"], ["float32", "int8"], ["float32", "uint8"],
  ["float16", "float32"], ["bfloat16", "float32"], ["float64", "float32"], ["int64", "int32"],
];

/** A tensor of `t` in `arena` holding the bytes `bytes`, at an odd element offset when `shift` > 0 (a view the user made). */
function inArena(arena: Arena, t: DType, bytes: Uint8Array, shift = 0): Tensor {
  const { view } = arenaView(arena, t, bytes.length / (t.bits / 8), shift, 0);
  view.bytes().set(bytes);
  return view;
}

/** castInto between tensors of one arena against castReference, with guard bytes around the output. */
function checkInPlace(arena: Arena, from: DType, to: DType, src: Uint8Array, opts: ResolvedCastOptions, shift: number, what: string): void {
  const n = src.length / (from.bits / 8);
  const x = inArena(arena, from, src, shift);
  // The output: a view into the middle of a larger arena tensor filled with a guard pattern.
  const o = arenaView(arena, to, n, 64 - (shift % 3), 64 + (shift % 3), 0xa5);
  const out = o.view;
  castInto(x, out, { saturate: opts.saturate, roundMode: opts.roundMode });
  const want = new (TYPED_ARRAYS[to.array as keyof typeof TYPED_ARRAYS])(n);
  castReference(x.data, from, want, to, n, opts);
  const g = out.bytes();
  const w = storageBytes(want);
  for (let i = 0; i < w.length; i++) {
    if (g[i] !== w[i]) assert.fail(`${what}: ${from.name} -> ${to.name}, n ${n}: output byte ${i} is ${g[i]}, want ${w[i]}`);
  }
  const outside = writtenOutside(o, 0xa5);
  if (outside !== undefined) assert.fail(`${what}: ${from.name} -> ${to.name}, n ${n}: byte ${outside} past the output was written`);
  assert.deepEqual(storageBytes(x.data), src, `${what}: the input is unchanged`);
}

// Both builds on every runtime (where the engine lacks relaxed SIMD they are the same build): the
// browser and Bun / Deno runs compare test names with Node's, and allow no skips.
for (const build of ["auto", "plain"] as const) {
  test(`${build} build: every 16-bit code, and 8-bit code under every option set, in place`, () => {
    useWasmBuild(build);
    try {
      const arena = createArena(4 << 20);
      assert.equal(arena.inPlace, wasmAvailable());
      for (const f of ["float16", "bfloat16"] as const) {
        for (const shift of [0, 1]) checkInPlace(arena, dtype(f), dtype("float32"), everyCodeBytes(16), OPTS, shift, "every code");
      }
      const sources = DTYPES.filter((t) => t.bits === 8 && !t.packed && t.kind !== "string");
      const targets = ["float32", "int32", "uint32"].map((n) => dtype(n));
      for (const from of sources) {
        for (const to of targets) {
          for (const saturate of [true, false]) {
            for (const roundMode of ["up", "down", "nearest"] as const) checkInPlace(arena, from, to, everyCodeBytes(8), { saturate, roundMode }, 0, "every code");
          }
        }
        arena.reset();
      }
    } finally {
      useWasmBuild("auto");
    }
  });

  test(`${build} build: random bit patterns, counts around the groups, odd offsets, in place`, () => {
    useWasmBuild(build);
    try {
      const rng = new Rng(0xa7e4a);
      const arena = createArena(8 << 20);
      const counts = [0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000, 16383, 16384, 16385, 65537 + rng.below(1000)];
      for (const [f, t] of PAIRS) {
        const from = dtype(f);
        const to = dtype(t);
        for (const n of counts) {
          checkInPlace(arena, from, to, randomPatterns(from, n, rng), OPTS, n % 5, `random, ${build}`);
          if (arena.used > 6 << 20) arena.reset();
        }
        // A quarter million patterns per pair in one call.
        arena.reset();
        checkInPlace(arena, from, to, randomPatterns(from, 1 << 18, rng), OPTS, 0, `random, ${build}`);
        arena.reset();
      }
    } finally {
      useWasmBuild("auto");
    }
  });
}

test("an arena tensor with an ordinary one, and tensors of two arenas: cast()'s bytes", () => {
  const rng = new Rng(17);
  const a = createArena(1 << 20);
  const b = createArena(1 << 20);
  for (const [f, t] of PAIRS) {
    const n = 1001;
    const x = Tensor.fromBytes(randomPatterns(dtype(f), n, rng).slice(), f, [n]);
    const want = cast(x, t);
    const xa = a.from(x);
    assert.deepEqual(cast(xa, t).bytes(), want.bytes(), `${f} -> ${t}: arena -> ordinary`);
    assert.deepEqual(castInto(x, a.zeros(t, [n])).bytes(), want.bytes(), `${f} -> ${t}: ordinary -> arena`);
    assert.deepEqual(castInto(xa, b.zeros(t, [n])).bytes(), want.bytes(), `${f} -> ${t}: arena -> another arena`);
    assert.deepEqual(a.cast(xa, t).bytes(), want.bytes(), `${f} -> ${t}: arena.cast`);
    // A pair without a kernel between tensors of one arena takes the ordinary path.
    assert.deepEqual(a.cast(xa, "float8e5m2").bytes(), cast(x, "float8e5m2").bytes(), `${f} -> float8e5m2 in an arena`);
  }
  // Packed and 64-bit targets merge into zeros: arena.cast into dirty, reused bytes still gives cast()'s.
  const x = Tensor.fromValues([1.5, -3, 7, 100, 0.25], "float32");
  for (let round = 0; round < 2; round++) {
    a.reset();
    a.zeros("uint8", [4096]).bytes().fill(0xff);
    a.reset();
    const xa = a.from(x);
    for (const t of ["uint4", "int64", "uint2"] as const) assert.deepEqual(a.cast(xa, t).bytes(), cast(x, t).bytes(), `float32 -> ${t}`);
  }
});

test("a full arena refuses with ARENA_FULL, allocates nothing and stays usable", () => {
  const arena = createArena(65536);
  assert.equal(arena.capacity, 65536);
  const a = arena.zeros("float32", [8192]); // 32 KiB
  throwsCode(() => arena.zeros("float32", [8193]), "ARENA_FULL", /32768 of 65536 bytes free; float32 \[8193\] needs 32772/);
  assert.equal(arena.used, 32768);
  const b = arena.zeros("float32", [8192]); // exactly the rest
  assert.equal(arena.used, 65536);
  throwsCode(() => arena.zeros("uint8", [1]), "ARENA_FULL", /0 of 65536 bytes free/);
  throwsCode(() => arena.cast(a, "float16"), "ARENA_FULL");
  castInto(Tensor.fromValues(Array.from({ length: 8192 }, (_, i) => i), "float32"), b);
  assert.equal((b.data as Float32Array)[8191], 8191);
  assert.equal(arena.zeros("uint8", [0]).size, 0);
});

test("a refused arena.cast allocates nothing; bad sizes and strings are refused", () => {
  const arena = createArena(1 << 16);
  const x = arena.from(Tensor.fromValues([1, 2], "float32"));
  const used = arena.used;
  throwsCode(() => arena.cast(x, "float8e4m3fn", { roundMode: "nearest", opset: 19 }), "INVALID_ATTRIBUTE");
  throwsCode(() => arena.cast(x, "float8e4m3fn", { opset: 18 }), "UNSUPPORTED_TYPE");
  assert.equal(arena.used, used);
  throwsCode(() => arena.cast(x, "string"), "UNSUPPORTED_TYPE", /fixed-width/);
  throwsCode(() => arena.from(Tensor.fromValues(["a"], "string")), "UNSUPPORTED_TYPE");
  assert.equal(arena.used, used);
  for (const bad of [-1, 1.5, Number.NaN, 2 ** 40, 2 ** 32 - 65535, "1024"]) throwsCode(() => createArena(bad as number), "INVALID_SHAPE");
});

test("reset() detaches every view a user holds before the bytes are handed out again", () => {
  const arena = createArena(1 << 20);
  const x = arena.from(Tensor.fromValues([1.5, -2, 3, 4, 5, 6, 7, 8, 9], "float32"));
  const y = arena.cast(x, "float16");
  const held = y.data;
  const heldBytes = y.bytes();
  const heldBuffer = (held as Uint16Array).buffer;
  arena.reset();
  assert.equal(held.length, 0, "a held typed array reads as empty");
  assert.equal(heldBytes.length, 0);
  assert.equal(heldBuffer.byteLength, 0, "the old buffer is detached");
  assert.equal(y.disposed, true);
  assert.equal(x.disposed, true);
  throwsCode(() => cast(x, "float16"), "INVALID_DATA", /disposed/);
  throwsCode(() => castInto(Tensor.fromValues([1, 2, 3, 4, 5, 6, 7, 8, 9], "float32"), y), "INVALID_DATA", /disposed/);
  throwsCode(() => arena.from(x), "INVALID_DATA", /disposed/);
  // The next owner of the bytes: written, and still invisible through the old view.
  const z = arena.zeros("uint16", [9]);
  (z.data as Uint16Array).fill(0xbeef);
  assert.equal(held.length, 0);
  assert.equal((held as Uint16Array)[0], undefined);
  // Writes through a held (detached) view go nowhere.
  (held as Uint16Array)[0] = 1;
  assert.equal((z.data as Uint16Array)[0], 0xbeef);
  assert.equal(arena.used, 18, "allocation restarted at 0");
});

test("zeros() after reset() are zeros although the memory was written", () => {
  const arena = createArena(1 << 17);
  for (let round = 0; round < 3; round++) {
    const a = arena.zeros("int32", [20000]);
    for (const v of a.data as Int32Array) assert.equal(v, 0, `round ${round}`);
    (a.data as Int32Array).fill(-1);
    arena.reset();
  }
  arena.zeros("uint8", [3]);
  const b = arena.zeros("float64", [10000]); // partly over written bytes, partly over never-used ones
  for (const v of b.data as Float64Array) assert.equal(Object.is(v, 0), true);
});

test("dispose() of an arena tensor does nothing: its bytes and its neighbours' stay", () => {
  const arena = createArena(8 << 20);
  const a = arena.from(Tensor.fromValues(Array.from({ length: 1 << 19 }, (_, i) => i), "float32")); // 2 MiB: pool-sized
  const b = arena.cast(a, "float16");
  const before = pooledStorageBytes();
  const held = b.data;
  b.dispose();
  a.dispose();
  assert.equal(a.disposed, false);
  assert.equal(b.disposed, false);
  assert.equal(held.length, 1 << 19);
  assert.equal(pooledStorageBytes(), before, "arena memory never enters the storage pool");
  assert.deepEqual(b.bytes(), cast(Tensor.fromValues(Array.from({ length: 1 << 19 }, (_, i) => i), "float32"), "float16").bytes());
  // A later allocation does not reuse a disposed tensor's bytes.
  const c = arena.zeros("uint8", [1 << 20]);
  c.bytes().fill(0xff);
  assert.equal((a.data as Float32Array)[(1 << 19) - 1], (1 << 19) - 1);
  assert.equal(castInto(a, b).size, 1 << 19, "still usable");
});

test("casts between tensors of one arena take the in-place kernels, before and after reset()", { skip: wasmAvailable() ? false : "no WebAssembly SIMD here" }, () => {
  const arena = createArena(1 << 20);
  const other = createArena(1 << 16);
  const f32 = dtype("float32");
  const f16 = dtype("float16");
  const scalar = (): void => assert.fail("the tail path runs only for a partial last group");
  for (let round = 0; round < 2; round++) {
    const x = arena.from(Tensor.fromValues([1, 2, 3, 4, 5, 6, 7, 8], "float32"));
    const y = arena.zeros("float16", [8]);
    assert.equal(residentCast(x.data, f32, y.data, f16, 8, OPTS, scalar), true, `round ${round}`);
    assert.deepEqual([...(y.data as Uint16Array)], [0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600, 0x4700, 0x4800]);
    assert.equal(residentCast(x.data, f32, new Uint16Array(8), f16, 8, OPTS, scalar), false, "an ordinary output");
    assert.equal(residentCast(x.data, f32, other.zeros("float16", [8]).data, f16, 8, OPTS, scalar), false, "another arena's output");
    assert.equal(residentCast(x.data, f32, arena.zeros("float8e4m3fn", [8]).data, dtype("float8e4m3fn"), 8, OPTS, scalar), false, "no kernel for the pair");
    arena.reset();
  }
});

test("arena methods given a wrong value in any argument throw a TensorcastError and allocate nothing", () => {
  const arena = createArena(1 << 16);
  const x = arena.from(Tensor.fromValues([1, 2], "float32"));
  const used = arena.used;
  let refused = 0;
  const wrong: unknown[] = [null, undefined, {}, [], 5, -1, 1.5, 2 ** 40, Number.NaN, "x", true, 5n, Symbol("s"), () => 1, new Uint8Array(3), [1e9, 1e9]];
  const calls: [string, unknown[], (...a: unknown[]) => unknown][] = [
    ["zeros", ["float32", [2]], (...a) => arena.zeros(a[0] as never, a[1] as never)],
    ["from", [x], (...a) => arena.from(a[0] as never)],
    ["cast", [x, "float16", {}], (...a) => arena.cast(a[0] as never, a[1] as never, a[2] as never)],
  ];
  for (const [name, good, f] of calls) {
    for (let k = 0; k < good.length; k++) {
      for (const w of wrong) {
        const args = good.slice();
        args[k] = w;
        const before = arena.used;
        const what = `${name} argument ${k} = ${typeof w === "symbol" ? "Symbol" : String(w)}`;
        try {
          f(...args); // some are valid (type 5 is ONNX's int16, [] a scalar shape)
          continue;
        } catch (e) {
          if (!(e instanceof TensorcastError)) assert.fail(`${what}: ${String(e)}`);
        }
        assert.equal(arena.used, before, `${what}: refused, and nothing allocated`);
        refused++;
      }
    }
  }
  assert.ok(refused > 30, `${refused} refusals`);
  assert.ok(arena.used >= used);
});

/**
 * Shared arenas (createArena(bytes, { shared: true })) and castIntoAsync between their tensors,
 * where every thread runs the WebAssembly kernels in place on the arena's one shared memory
 * (src/parallel/split.ts castResident, src/parallel/range.ts resident ranges):
 * - bit for bit against castReference on real worker threads: every float16 and bfloat16 code,
 *   random float32 patterns, the other kernel pairs; with the caller converting and with the
 *   workers alone (so a broken worker path cannot hide behind the calling thread);
 * - counts around chunk and group boundaries, inputs at odd element offsets, outputs that are user
 *   views into the middle of the arena with guard bytes around them (nothing outside is written);
 * - the memory goes to a worker only when it is not the one it was last sent; a range a worker
 *   refuses rejects the call with its TensorcastError, after every thread has stopped;
 * - reset() refused (ARENA_SHARED) with every view still valid; no SharedArrayBuffer:
 *   UNSUPPORTED_PLATFORM; a table-kernel pair and tensors of two arenas take the other paths.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createArena, type Arena } from "../../src/arena.js";
import { dtype, type DType, type DTypeName } from "../../src/dtype/table.js";
import { TensorcastError } from "../../src/errors.js";
import { castReference, type ResolvedCastOptions } from "../../src/kernels/reference.js";
import { wasmAvailable } from "../../src/kernels/wasm/index.js";
import { castIntoAsync, closeCastAsyncPool } from "../../src/node/cast-async.js";
import { cast } from "../../src/ops/cast.js";
import type { WorkerEvents, WorkerHandle, WorkerHost } from "../../src/parallel/pool.js";
import { castRange, type CastRequest } from "../../src/parallel/range.js";
import { castIntoAsyncOn, closePool } from "../../src/parallel/split.js";
import { Tensor, TYPED_ARRAYS } from "../../src/tensor.js";
import { throwsCode } from "../support/assertions.js";
import { arenaView, everyCodeBytes, randomPatterns, storageBytes, writtenOutside } from "../support/cast-inputs.js";
import { Rng } from "../support/rng.js";

const OPTS: ResolvedCastOptions = { saturate: true, roundMode: "up" };
const GUARD = 0xa5;
const simd = wasmAvailable();
const noSimd = simd ? false : "no WebAssembly SIMD here: shared arenas have no in-place kernels";

/**
 * castIntoAsync between a view of `src` at an odd offset and an output view guarded on both sides,
 * both in `arena`, against castReference; nothing outside the output's bytes is written.
 */
async function checkShared(
  arena: Arena, from: DType, to: DType, src: Uint8Array, shift: number, threads: number, callerConverts: boolean, what: string,
): Promise<void> {
  const n = src.length / (from.bits / 8);
  const x = arenaView(arena, from, n, shift);
  x.view.bytes().set(src);
  const out = arenaView(arena, to, n, 64 + (shift % 3), 64 + (shift % 3), GUARD);
  const got = await castIntoAsync(x.view, out.view, { threads, callerConverts, minElements: 0 });
  assert.equal(got, out.view);
  const want = new (TYPED_ARRAYS[to.array as keyof typeof TYPED_ARRAYS])(n);
  castReference(x.view.data, from, want, to, n, OPTS);
  const g = out.view.bytes();
  const w = storageBytes(want);
  for (let i = 0; i < w.length; i++) {
    if (g[i] !== w[i]) assert.fail(`${what}: ${from.name} -> ${to.name}, n ${n}: output byte ${i} is ${g[i]}, want ${w[i]}`);
  }
  const outside = writtenOutside(out, GUARD);
  if (outside !== undefined) assert.fail(`${what}: ${from.name} -> ${to.name}, n ${n}: guard byte ${outside} was written`);
  assert.deepEqual(x.view.bytes(), src, `${what}: the input is unchanged`);
}

test("every float16 and bfloat16 code to float32, in place on 2 and 3 threads, with and without the caller converting", { skip: noSimd }, async () => {
  const arena = createArena(8 << 20, { shared: true });
  assert.ok(arena.shared && arena.inPlace);
  assert.ok((arena.zeros("uint8", [1]).data as Uint8Array).buffer instanceof SharedArrayBuffer);
  for (const f of ["float16", "bfloat16"] as const) {
    for (const [threads, caller] of [[2, true], [2, false], [3, false]] as const) {
      await checkShared(arena, dtype(f), dtype("float32"), everyCodeBytes(16), 1, threads, caller, `every code, ${threads} threads, caller ${caller}`);
    }
  }
  await closeCastAsyncPool();
});

test("random float32 patterns to float16 and bfloat16, and the other kernel pairs, on counts around chunk and group boundaries", { skip: noSimd }, async () => {
  const rng = new Rng(16);
  const pairs: [DTypeName, DTypeName][] = [
    ["float32", "float16"], ["float32", "bfloat16"], ["float16", "float32"], ["bfloat16", "float32"],
    ["float32", "int8"], ["float32", "uint8"], ["float64", "float32"], ["int64", "int32"],
  ];
  // 2 threads: chunks of count / 16 rounded up to 16 elements (at most 65536), so these cut
  // chunks and groups every way: a last chunk of 1 element, of a partial group, of whole groups.
  const counts = [1, 7, 8, 9, 15, 16, 17, 31, 33, 255, 257, 4095, 4097, 65535, 65537, 16 * 65536 - 1, 16 * 65536 + 17, 3 * 65536 + 9];
  for (const [from, to] of pairs) {
    const sizes = from === "float32" && (to === "float16" || to === "bfloat16") ? counts : counts.filter((n) => n < 70000);
    for (const n of sizes) {
      // A shared arena cannot be reset: a fresh one per count, reclaimed by GC.
      const arena = createArena(32 * n + (1 << 16), { shared: true });
      for (const caller of [true, false]) {
        await checkShared(arena, dtype(from), dtype(to), randomPatterns(dtype(from), n, rng), 1 + (n % 5), 2, caller, `random, caller ${caller}`);
      }
    }
  }
  await closeCastAsyncPool();
});

test("an 8-bit table pair, and tensors of two shared arenas, take the ordinary paths: cast()'s bytes", { skip: noSimd }, async () => {
  const a = createArena(1 << 20, { shared: true });
  const b = createArena(1 << 20, { shared: true });
  const rng = new Rng(3);
  const x8 = a.from(Tensor.fromStorage(new Int8Array(randomPatterns(dtype("int8"), 50_001, rng).buffer, 0, 50_001) as never, "int8", [50_001]));
  const o32 = a.zeros("float32", x8.shape);
  await castIntoAsync(x8, o32, { threads: 2, minElements: 0 });
  assert.deepEqual(o32.bytes(), cast(x8, "float32").bytes());
  const x = a.from(Tensor.fromStorage(new Float32Array(randomPatterns(dtype("float32"), 50_001, rng).buffer) as never, "float32", [50_001]));
  const y = b.zeros("float16", x.shape);
  await castIntoAsync(x, y, { threads: 2, minElements: 0 });
  assert.deepEqual(y.bytes(), cast(x, "float16").bytes());
  await closeCastAsyncPool();
});

test("reset() of a shared arena is refused with ARENA_SHARED; its tensors and views stay valid and it keeps allocating", () => {
  const arena = createArena(1 << 16, { shared: true });
  const x = arena.from(Tensor.fromValues([1.5, -2, 3], "float32"));
  const view = x.data as Float32Array;
  throwsCode(() => arena.reset(), "ARENA_SHARED", /views of shared memory cannot be detached/);
  assert.equal(view.length, 3);
  assert.deepEqual(x.toValues(), [1.5, -2, 3]);
  assert.ok(!x.disposed);
  const y = arena.zeros("float32", [2]);
  assert.ok((y.data as Float32Array).byteOffset >= view.byteOffset + view.byteLength, "the next tensor does not reuse the bytes");
  // A non-shared arena still resets.
  const plain = createArena(1 << 16);
  assert.equal(plain.shared, false);
  plain.reset();
});

test("no SharedArrayBuffer: UNSUPPORTED_PLATFORM with the cross-origin isolation advice; bad options refused", () => {
  const saved = globalThis.SharedArrayBuffer;
  try {
    // As in a browser page without cross-origin isolation.
    (globalThis as { SharedArrayBuffer?: unknown }).SharedArrayBuffer = undefined;
    throwsCode(() => createArena(1 << 16, { shared: true }), "UNSUPPORTED_PLATFORM", /Cross-Origin-Opener-Policy: same-origin/);
  } finally {
    globalThis.SharedArrayBuffer = saved;
  }
  throwsCode(() => createArena(1 << 16, { shared: 1 as unknown as boolean }), "INVALID_ATTRIBUTE", /shared\?: boolean/);
  throwsCode(() => createArena(1 << 16, null as never), "INVALID_ATTRIBUTE");
});

test("a worker that has not started when the caller runs out of chunks is not waited for, and then converts nothing", { skip: noSimd }, async () => {
  const held: (() => void)[] = [];
  const answers: { claimed: number; error: unknown }[] = [];
  const host: WorkerHost = {
    parallelism: () => 3,
    hasWorkers: () => true,
    sharedMemory: () => true,
    spawn(events: WorkerEvents): WorkerHandle {
      return {
        post: (request) => held.push(() => {
          const before = request.kind === "resident" ? request.next[0]! : -1;
          const { response } = castRange(request);
          answers.push({ claimed: (request.kind === "resident" ? request.next[0]! : -1) - before, error: response.error });
          events.message(response);
        }),
        busy: () => undefined,
        terminate: async () => undefined,
      };
    },
  };
  const arena = createArena(1 << 20, { shared: true });
  const rng = new Rng(9);
  const x = arena.from(Tensor.fromStorage(new Float32Array(randomPatterns(dtype("float32"), 50_001, rng).buffer) as never, "float32", [50_001]));
  const y = arena.zeros("float16", x.shape);
  // The workers' requests are held: the call must settle on the calling thread's work alone.
  await castIntoAsyncOn(host, x, y, { threads: 3, minElements: 0 });
  assert.deepEqual(y.bytes(), cast(x, "float16").bytes());
  assert.equal(held.length, 2);
  y.bytes().fill(0x77); // what a late worker must not overwrite
  for (const run of held.splice(0)) run();
  assert.deepEqual(answers.map((a) => a.claimed), [0, 0], "the late workers claimed no chunk");
  assert.ok(answers.every((a) => a.error === undefined));
  assert.ok(y.bytes().every((b) => b === 0x77));
  await closePool(host);
});

/** A host whose workers run castRange in this thread on a later macrotask, seeing each request first. */
function fakeHost(see: (r: CastRequest) => CastRequest): WorkerHost {
  return {
    parallelism: () => 2,
    hasWorkers: () => true,
    sharedMemory: () => true,
    spawn(events: WorkerEvents): WorkerHandle {
      return {
        post: (request) => setTimeout(() => events.message(castRange(see(request)).response), 0),
        busy: () => undefined,
        terminate: async () => undefined,
      };
    },
  };
}

test("the memory goes to a worker only when it was not the last one sent; a range the worker refuses rejects with its TensorcastError", { skip: noSimd }, async () => {
  const sent: boolean[] = [];
  let refuse = false;
  const host = fakeHost((r) => {
    if (r.kind !== "resident") return r;
    sent.push(r.memory !== undefined);
    // Past the end of the memory: the worker's own bounds check answers INVALID_DATA.
    return refuse ? { ...r, srcOffset: r.srcOffset + 2 ** 31 } : r;
  });
  const a = createArena(1 << 20, { shared: true });
  const b = createArena(1 << 20, { shared: true });
  const rng = new Rng(5);
  const run = async (arena: Arena): Promise<void> => {
    const x = arena.from(Tensor.fromStorage(new Float32Array(randomPatterns(dtype("float32"), 40_000, rng).buffer) as never, "float32", [40_000]));
    const y = arena.zeros("bfloat16", x.shape);
    await castIntoAsyncOn(host, x, y, { threads: 2, minElements: 0, callerConverts: false });
    assert.deepEqual(y.bytes(), cast(x, "bfloat16").bytes());
  };
  await run(a);
  await run(a);
  await run(b);
  await run(a);
  assert.deepEqual(sent, [true, false, true, true]);
  refuse = true;
  const x = a.zeros("float32", [40_000]);
  const y = a.zeros("float16", x.shape);
  await assert.rejects(castIntoAsyncOn(host, x, y, { threads: 2, minElements: 0, callerConverts: false }), (e: unknown) =>
    e instanceof TensorcastError && e.code === "INVALID_DATA" && /does not fit the arena's/.test(e.message));
  await closePool(host);
});

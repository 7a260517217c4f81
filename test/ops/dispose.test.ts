/**
 * Tensor.dispose() and the storage pool (src/storage-pool.ts): a disposed cast() output's memory
 * serves the next cast() of the same byte size, and
 * - the reused output has exactly the bytes of a fresh one, including the types whose kernels merge
 *   into a zero-filled output (packed uint4, int64), for which the old contents must be cleared;
 * - every view of the disposed storage a user holds is detached (reads nothing), so the memory is
 *   never visible through two live tensors;
 * - a storage the caller supplied, an output under 1 MiB, and everything on a runtime without
 *   ArrayBuffer.prototype.transfer (Node 20) are left alone;
 * - a disposed tensor is refused as cast()'s input and castInto's output.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cast, castInto } from "../../src/ops/cast.js";
import { Tensor } from "../../src/tensor.js";
import { canReleaseStorage, clearStoragePool, POOL_MIN_BYTES, pooledStorageBytes } from "../../src/storage-pool.js";
import { TensorcastError } from "../../src/errors.js";

const N = POOL_MIN_BYTES; // float32 elements: 4 MiB in, 1 MiB or more out
const releases = canReleaseStorage();

function input(n: number, seed: number): Tensor<"float32"> {
  const a = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    a[i] = ((s >>> 8) / 65536 - 128) * (i % 7 === 0 ? 1e6 : 1); // in and out of the int8 / uint4 ranges
  }
  return Tensor.fromStorage(a, "float32", [n]);
}

function bytesOf(t: Tensor): Uint8Array {
  return new Uint8Array(t.bytes());
}

/** The first index where the arrays differ, -1 when equal (a failing deepEqual on megabytes would print them all). */
function firstDifference(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

test("the runtime releases storage exactly where ArrayBuffer.prototype.transfer exists", () => {
  assert.equal(releases, typeof (ArrayBuffer.prototype as { transfer?: unknown }).transfer === "function");
});

test("a disposed output is detached, with every view of it, and its memory pooled", () => {
  clearStoragePool();
  const y = cast(input(N, 1), "float16");
  const view = new Uint8Array(y.data.buffer);
  const before = bytesOf(y);
  y.dispose();
  if (!releases) {
    assert.equal(y.disposed, false);
    assert.equal(firstDifference(bytesOf(y), before), -1);
    assert.equal(pooledStorageBytes(), 0);
    return;
  }
  assert.equal(y.disposed, true);
  assert.equal(y.data.length, 0);
  assert.equal(view.length, 0);
  assert.equal(view[0], undefined);
  assert.equal(pooledStorageBytes(), 2 * N);
  y.dispose(); // a second time: nothing
  assert.equal(pooledStorageBytes(), 2 * N);
  clearStoragePool();
});

test("a reused output has the bytes of a fresh one, for every kind of kernel", () => {
  // Each target type after a disposed output of the same byte size full of 0xFF bytes.
  const words = new Uint32Array(N / 4).map((_, i) => (i * 2654435761) >>> 0);
  const cases: [Tensor, string][] = [
    [input(N, 7), "float16"], [input(2 * N, 7), "int8"], [input(2 * N, 7), "uint8"], [input(N, 7), "bfloat16"],
    [input(N / 8, 7), "float64"], [input(N / 4, 7), "int64"],
    // Kernels that leave bytes of the output unwritten (the high words; the last byte's high half).
    [Tensor.fromStorage(words, "uint32", [N / 4]), "int64"], [input(4 * N - 1, 7), "uint4"],
  ];
  for (const [x, to] of cases) {
    clearStoragePool();
    const fresh = bytesOf(cast(x, to as "float16"));
    const dirty = cast(Tensor.fromStorage(new Float32Array(fresh.length).fill(255), "float32", [fresh.length]), "uint8");
    assert.equal(dirty.data.byteLength, fresh.length);
    const old = dirty.data.buffer;
    dirty.dispose();
    const reused = cast(x, to as "float16");
    if (releases) assert.equal(pooledStorageBytes(), 0, `${to}: the pooled buffer was taken`);
    assert.notEqual(reused.data.buffer, old);
    assert.equal(firstDifference(bytesOf(reused), fresh), -1, `${to}: reused output differs from a fresh one`);
  }
  clearStoragePool();
});

test("a pooled buffer goes to one tensor only", () => {
  if (!releases) return;
  clearStoragePool();
  const x = input(N, 3);
  const a = cast(x, "float16");
  a.dispose();
  const b = cast(x, "float16");
  const c = cast(x, "float16");
  assert.notEqual(b.data.buffer, c.data.buffer);
  assert.equal(pooledStorageBytes(), 0);
  b.data[0] = 0x1234;
  assert.notEqual(c.data[0], 0x1234);
  assert.equal(a.data.length, 0);
  clearStoragePool();
});

test("storage the caller supplied, and small outputs, are never detached", () => {
  clearStoragePool();
  const own = new Uint16Array(N);
  own[5] = 0x3c00;
  const t = Tensor.fromStorage(own, "float16", [N]);
  t.dispose();
  assert.equal(own.length, N);
  assert.equal(t.data[5], 0x3c00);
  assert.equal(t.disposed, false);
  const small = cast(input(1000, 2), "float16");
  small.dispose();
  assert.equal(small.data.length, 1000);
  // Ownership goes with the buffer: a second tensor wrapping cast()'s storage may release it, and
  // both then read as disposed (detached, never overwritten).
  const y = cast(input(N, 4), "float16");
  const again = Tensor.fromStorage(y.data, "float16", [N]);
  assert.equal(pooledStorageBytes(), 0);
  again.dispose();
  if (releases) assert.equal(y.disposed, true);
  clearStoragePool();
});

test("a disposed tensor is refused as an input, as castInto's output and by bytes()", { skip: releases ? false : "no ArrayBuffer.prototype.transfer here (Node 20): nothing is ever disposed" }, () => {
  const y = cast(input(N, 5), "float16");
  y.dispose();
  assert.throws(() => cast(y, "float32"), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_DATA" && /disposed/.test(e.message));
  assert.throws(() => y.bytes(), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_DATA" && /bytes\(\): the tensor was disposed/.test(e.message));
  const out = cast(input(N, 6), "float16");
  out.dispose();
  assert.throws(() => castInto(input(N, 6), out), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_DATA" && /disposed/.test(e.message));
  clearStoragePool();
});

test("Symbol.dispose disposes (for `using`)", () => {
  const sym = (Symbol as { dispose?: symbol }).dispose;
  if (!sym) return;
  clearStoragePool();
  const y = cast(input(N, 8), "float16");
  (y as unknown as Record<symbol, () => void>)[sym]!();
  assert.equal(y.disposed, releases);
  clearStoragePool();
});

/**
 * An arena past 2 GiB: tensors whose byte offsets do not fit a signed 32-bit integer still cast in
 * place, to castReference's bytes. The kernels take offsets as i32 parameters, so JS hands them
 * over as negative numbers, which WebAssembly reads back as the unsigned addresses. Only the pages
 * the tensors use are touched (the rest of the memory is reserved, not resident), so this costs
 * some megabytes, not 2 GiB. Node only: browsers may refuse a 2 GiB memory.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createArena } from "../src/arena.js";
import { dtype, type DTypeName } from "../src/dtype/table.js";
import { castReference } from "../src/kernels/reference.js";
import { wasmAvailable } from "../src/kernels/wasm/index.js";
import { residentCast } from "../src/kernels/wasm/resident.js";
import { TYPED_ARRAYS } from "../src/tensor.js";
import { Rng } from "./support/rng.js";

test("tensors past 2 GiB in an arena cast in place, bit for bit", { skip: wasmAvailable() ? false : "no WebAssembly SIMD here" }, () => {
  const arena = createArena(2 ** 31 + (4 << 20));
  arena.zeros("uint8", [2 ** 31 + 64]); // never written: its pages stay unmapped
  const rng = new Rng(31);
  const pairs: [DTypeName, DTypeName][] = [["float32", "float16"], ["float16", "float32"], ["float32", "int8"], ["float64", "float32"], ["int64", "int32"], ["float8e4m3fn", "float32"]];
  for (const [f, t] of pairs) {
    const from = dtype(f);
    const to = dtype(t);
    const n = 4099;
    const x = arena.zeros(from, [n]);
    const bytes = x.bytes();
    for (let i = 0; i < bytes.length; i++) bytes[i] = rng.u32() & 0xff;
    const y = arena.zeros(to, [n]);
    assert.ok((x.data as Uint8Array).byteOffset > 2 ** 31 && (y.data as Uint8Array).byteOffset > 2 ** 31);
    const OPTS = { saturate: true, roundMode: "up" } as const;
    assert.equal(residentCast(x.data, from, y.data, to, n, OPTS, castReference), true, `${f} -> ${t} in place`);
    const ctor = TYPED_ARRAYS[to.array as keyof typeof TYPED_ARRAYS];
    const want = new ctor(n);
    castReference(x.data, from, want, to, n, OPTS);
    const w = new Uint8Array(want.buffer);
    const g = y.bytes();
    for (let i = 0; i < w.length; i++) if (g[i] !== w[i]) assert.fail(`${f} -> ${t}: byte ${i} is ${g[i]}, want ${w[i]}`);
  }
});

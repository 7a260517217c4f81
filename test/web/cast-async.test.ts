/**
 * tensorcast/web outside a browser (Node has SharedArrayBuffer but no global Worker): castAsync and
 * castIntoAsync run cast / castInto in the calling thread and give the same bytes and errors. The
 * Web Worker path itself runs in Chromium (test/browser/cast-async.test.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cast, Tensor, TensorcastError } from "../../src/index.js";
import { castAsync, castIntoAsync, sharedZeros } from "../../src/web/index.js";

test("without a global Worker, tensorcast/web runs cast in the calling thread", async () => {
  assert.equal(typeof (globalThis as { Worker?: unknown }).Worker, "undefined");
  const x = Tensor.zeros("float32", [1 << 16]);
  const f = x.data as Float32Array;
  for (let i = 0; i < f.length; i++) f[i] = (i - 30000) * 0.0731;
  const y = await castAsync(x, "float8e4m3fn", { threads: 4, minElements: 0 });
  assert.deepEqual(y.bytes(), cast(x, "float8e4m3fn").bytes());
  assert.ok(!((y.data as Uint8Array).buffer instanceof SharedArrayBuffer), "split although there is no Worker");
  const out = sharedZeros("bfloat16", [1 << 16]);
  assert.equal(await castIntoAsync(x, out, { threads: 4, minElements: 0 }), out);
  assert.deepEqual(out.bytes(), cast(x, "bfloat16").bytes());
  await assert.rejects(castAsync(x, "float8e4m3fn", { opset: 18, minElements: 0 }), (e: unknown) => e instanceof TensorcastError && e.code === "UNSUPPORTED_TYPE");
  await assert.rejects(castAsync(x, "float16", { threads: 0 }), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE");
});

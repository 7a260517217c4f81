/**
 * castAsync: the bytes of `cast` for every numeric pair, whatever the split (odd sizes, packed
 * types, 2 to 5 ranges, input shared or copied); `cast`'s errors; strings, same-type and small
 * casts go to `cast`; the worker pool never keeps the process alive.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import os from "node:os";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cast, dtype, DTYPES, Tensor, TensorcastError, type CastOptions, type DType } from "../../src/index.js";
import { castAsync, castIntoAsync, closeCastAsyncPool, sharedZeros, type CastAsyncOptions } from "../../src/node/index.js";
import { optionSets, randomTensor } from "../support/cast-inputs.js";
import { scratch } from "./helpers.js";

const NUMERIC = DTYPES.filter((t) => t.kind !== "string" && t.kind !== "complex");

function sameTensor(got: Tensor, want: Tensor, what: string): void {
  assert.equal(got.dtype, want.dtype, what);
  assert.deepEqual(got.shape, want.shape, what);
  assert.ok(Buffer.from(got.bytes()).equals(Buffer.from(want.bytes())), `${what}: bytes differ from cast()`);
}

test("every numeric pair, both saturate settings, every e8m0 round mode: cast's bytes on odd sizes, split between two threads", async () => {
  let pairs = 0;
  for (const [i, from] of NUMERIC.entries()) {
    const size = 8 * 611 + 1 + (i % 7); // odd, so the last range ends mid-byte for packed types
    const x = randomTensor(from, size, 100 + i);
    const before = Buffer.from(x.bytes());
    for (const to of NUMERIC) {
      for (const opts of optionSets(to)) {
        const got = await castAsync(x, to, { ...opts, minElements: 0, threads: 2 });
        sameTensor(got, cast(x, to, opts), `${from.name} -> ${to.name} ${JSON.stringify(opts)}`);
        pairs++;
      }
    }
    assert.ok(Buffer.from(x.bytes()).equals(before), `${from.name}: the input was changed`);
  }
  assert.ok(pairs > NUMERIC.length * (NUMERIC.length - 1));
});

test("castIntoAsync: every numeric pair into a garbage-filled shared output, split between two threads, gives cast's bytes", async () => {
  let pairs = 0;
  for (const [i, from] of NUMERIC.entries()) {
    const size = 8 * 611 + 3 + (i % 5);
    const x = randomTensor(from, size, 300 + i);
    for (const to of NUMERIC) {
      for (const opts of optionSets(to)) {
        const out = randomTensor(to, size, 900 + pairs, true);
        const got = await castIntoAsync(x, out, { ...opts, minElements: 0, threads: 2 });
        assert.equal(got, out);
        sameTensor(out, cast(x, to, opts), `${from.name} -> ${to.name} ${JSON.stringify(opts)}`);
        pairs++;
      }
    }
  }
  assert.ok(pairs > NUMERIC.length * (NUMERIC.length - 1));
});

test("castIntoAsync: large tensors, output reused; an ordinary output runs castInto in the calling thread; errors", async () => {
  const size = (1 << 20) + 4099;
  for (const [i, [from, to]] of [["float32", "float16"], ["bfloat16", "float32"], ["float32", "uint4"], ["uint32", "int64"]].entries()) {
    const f = DTYPES.find((t) => t.name === from)!;
    const t = DTYPES.find((d) => d.name === to)!;
    const out = randomTensor(t, size, 40 + i, true);
    for (let round = 0; round < 2; round++) {
      const x = randomTensor(f, size, 50 + 2 * i + round);
      await castIntoAsync(x, out);
      sameTensor(out, cast(x, t), `${from} -> ${to}, call ${round + 1}`);
    }
    const plain = randomTensor(t, size, 60 + i);
    const x = randomTensor(f, size, 70 + i);
    assert.equal(await castIntoAsync(x, plain, { minElements: 0 }), plain);
    sameTensor(plain, cast(x, t), `${from} -> ${to} into an ordinary ArrayBuffer`);
  }
  const zeros = sharedZeros("uint4", [3, 5]);
  assert.deepEqual(zeros.shape, [3, 5]);
  assert.ok(zeros.data.buffer instanceof SharedArrayBuffer);
  assert.deepEqual(zeros.bytes(), new Uint8Array(8));
  const viaHelper = sharedZeros("float16", [size]);
  const x16 = randomTensor(dtype("float32"), size, 80);
  await castIntoAsync(x16, viaHelper);
  sameTensor(viaHelper, cast(x16, "float16"), "float32 -> float16 into sharedZeros");
  const x = randomTensor(dtype("float32"), 1 << 16, 1);
  const shared = (t: string, shape: number[]): Tensor => randomTensor(DTYPES.find((d) => d.name === t)!, shape.reduce((a, b) => a * b, 1), 2, true);
  await assert.rejects(castIntoAsync(x, shared("float16", [1 << 15]), { minElements: 0 }), (e: unknown) => e instanceof TensorcastError && e.code === "SHAPE_MISMATCH");
  await assert.rejects(castIntoAsync(x, shared("float8e4m3fn", [1 << 16]), { minElements: 0, opset: 13 }), (e: unknown) => e instanceof TensorcastError && e.code === "UNSUPPORTED_TYPE");
  const aliased = Tensor.fromStorage(new Uint16Array((x.data as Float32Array).buffer, 0, 1 << 16), "float16", [1 << 16]);
  await assert.rejects(castIntoAsync(x, aliased, { minElements: 0 }), (e: unknown) => e instanceof TensorcastError && e.code === "ALIASED_OUTPUT");
});

test("large tensors with the default threshold and threads: split, result on shared memory, equal to cast", async () => {
  const size = (1 << 20) + 4099;
  const cases: [string, string, CastOptions][] = [
    ["float32", "float16", {}], ["float16", "float32", {}], ["float32", "bfloat16", {}], ["bfloat16", "float32", {}],
    ["float32", "float8e4m3fn", {}], ["float32", "float8e4m3fn", { saturate: false }], ["float8e4m3fn", "float32", {}],
    ["float32", "float8e5m2", { saturate: false }], ["float32", "float4e2m1", {}], ["float32", "float6e3m2", {}],
    ["float32", "float8e8m0", { roundMode: "nearest", saturate: false }], ["float64", "float32", {}],
    ["int64", "int32", {}], ["uint4", "float16", {}], ["float32", "int2", {}], ["float16", "float8e5m2fnuz", {}],
    ["int32", "float64", {}], ["float64", "float8e4m3fnuz", {}],
  ];
  for (const [i, [from, to, opts]] of cases.entries()) {
    const x = randomTensor(DTYPES.find((t) => t.name === from)!, size, 7 + i);
    const want = cast(x, to, opts);
    // The same elements in a SharedArrayBuffer: the workers read them in place.
    const sab = new SharedArrayBuffer(x.bytes().byteLength);
    new Uint8Array(sab).set(x.bytes());
    const xs = Tensor.fromBytes(new Uint8Array(sab), x.dtype, x.shape);
    for (const input of [x, xs]) {
      // The default thread count, except on a one-core machine, where castAsync would just run cast.
      const got = await castAsync(input, to, os.availableParallelism() < 2 ? { ...opts, threads: 2 } : opts);
      const what = `${from} -> ${to} ${JSON.stringify(opts)} shared input ${input === xs}`;
      sameTensor(got, want, what);
      assert.ok((got.data as Uint8Array).buffer instanceof SharedArrayBuffer, `${what}: expected the split path`);
    }
  }
});

test("splits into 2, 4 and 5 ranges and sizes right around the boundaries give the same bytes", async () => {
  const pairs: [string, string][] = [["float32", "float6e2m3"], ["float6e3m2", "float32"], ["int2", "uint4"], ["float32", "float16"], ["uint64", "int8"]];
  for (const [from, to] of pairs) {
    for (const size of [16, 17, 23, 24, 25, 31, 33, 64 + 7, 1000, 4096 * 3 + 5]) {
      const x = randomTensor(DTYPES.find((t) => t.name === from)!, size, size);
      const want = cast(x, to);
      for (const threads of [2, 4, 5]) sameTensor(await castAsync(x, to, { threads, minElements: 0 }), want, `${from} -> ${to} n=${size} threads=${threads}`);
    }
  }
});

test("a multi-dimensional shape is kept", async () => {
  const x = randomTensor(DTYPES.find((t) => t.name === "float32")!, 6 * 1000, 3);
  const x3 = Tensor.fromStorage(x.data as Float32Array, "float32", [2, 3, 1000]);
  const got = await castAsync(x3, "bfloat16", { minElements: 0 });
  assert.deepEqual(got.shape, [2, 3, 1000]);
  sameTensor(got, cast(x3, "bfloat16"), "float32 -> bfloat16 [2, 3, 1000]");
});

test("concurrent calls share the pool and each gets its own bytes", async () => {
  const f32 = DTYPES.find((t) => t.name === "float32")!;
  const inputs = [0, 1, 2, 3, 4, 5].map((s) => randomTensor(f32, 50_000 + s, 40 + s));
  const targets = ["float16", "float8e4m3fn", "bfloat16", "int4", "float8e8m0", "uint8"] as const;
  const got = await Promise.all(inputs.map((x, i) => castAsync(x, targets[i], { minElements: 0, threads: 3 })));
  got.forEach((g, i) => sameTensor(g, cast(inputs[i], targets[i]), `concurrent ${targets[i]}`));
});

test("small tensors, strings and same-type casts run cast in the calling thread", async () => {
  const f32 = DTYPES.find((t) => t.name === "float32")!;
  const small = randomTensor(f32, 1000, 5);
  const a = await castAsync(small, "float16");
  sameTensor(a, cast(small, "float16"), "small");
  assert.ok(!((a.data as Uint16Array).buffer instanceof SharedArrayBuffer));

  const values = Tensor.fromValues([1.5, NaN, -0, 1e-5, 16777216, Infinity], "float32");
  assert.deepEqual((await castAsync(values, "string", { minElements: 0 })).toValues(), cast(values, "string").toValues());
  assert.deepEqual(
    (await castAsync(values, "string", { minElements: 0, stringFormat: "onnxruntime" })).toValues(),
    cast(values, "string", { stringFormat: "onnxruntime" }).toValues(),
  );
  const strings = Tensor.fromValues(["1.5", "nan", "-inf", "1e300"], "string");
  sameTensor(await castAsync(strings, "float8e5m2", { minElements: 0, saturate: false }), cast(strings, "float8e5m2", { saturate: false }), "string -> e5m2");

  const big = randomTensor(f32, 100_000, 6);
  const same = await castAsync(big, "float32", { minElements: 0 });
  sameTensor(same, big, "same type");
  assert.notEqual(same.data, big.data);

  const one = await castAsync(big, "float16", { threads: 1, minElements: 0 });
  sameTensor(one, cast(big, "float16"), "threads 1");
  assert.ok(!((one.data as Uint16Array).buffer instanceof SharedArrayBuffer));
});

/** castAsync's rejection is the TensorcastError cast throws (code and message). */
async function sameError(run: () => Promise<unknown>, reference: () => unknown, what: string): Promise<void> {
  let want: unknown;
  try {
    reference();
  } catch (e) {
    want = e;
  }
  assert.ok(want instanceof TensorcastError, `${what}: cast did not throw`);
  await assert.rejects(run(), (e: unknown) => {
    assert.ok(e instanceof TensorcastError, `${what}: ${String(e)}`);
    assert.equal(e.code, want.code, what);
    assert.equal(e.message, want.message, what);
    return true;
  }, what);
}

test("errors are cast's TensorcastErrors, as rejections, for large and small inputs", async () => {
  const f32 = DTYPES.find((t) => t.name === "float32")!;
  const bf16 = DTYPES.find((t) => t.name === "bfloat16")!;
  for (const size of [10, 100_000]) {
    const x = randomTensor(f32, size, 9);
    const b = randomTensor(bf16, size, 10);
    const cases: [string, Tensor, unknown, unknown][] = [
      ["complex target", x, "complex64", {}],
      ["unknown type", x, "float12", {}],
      ["bfloat16 before Cast-13", x, "bfloat16", { opset: 12 }],
      ["bfloat16 source before Cast-13", b, "float32", { opset: 12 }],
      ["float8 before Cast-19", x, "float8e4m3fn", { opset: 18 }],
      ["saturate before Cast-19", x, "float16", { opset: 18, saturate: false }],
      ["round_mode before Cast-24", x, "float8e8m0", { opset: 23, roundMode: "down" }],
      ["bad round mode", x, "float8e8m0", { roundMode: "sideways" }],
      ["bad saturate", x, "float8e4m3fn", { saturate: "no" }],
      ["unknown option", x, "float16", { saturation: false }],
      ["opset too old", x, "float16", { opset: 0 }],
      ["`to` as a number before Cast-6", x, 10, { opset: 5 }],
      ["float6 before Cast-28", x, "float6e2m3", { opset: 25 }],
    ];
    for (const [what, input, to, opts] of cases) {
      await sameError(
        () => castAsync(input, to as never, { ...(opts as CastOptions), minElements: 0 } as CastAsyncOptions),
        () => cast(input, to as never, opts as CastOptions),
        `${what} (${size} elements)`,
      );
    }
    await sameError(() => castAsync(input0(), "float16", null as never), () => cast(input0(), "float16", null as never), "null options");
    await sameError(() => castAsync("x" as never, "float16", { minElements: 0 }), () => cast("x" as never, "float16"), "not a tensor");
  }
  for (const [key, value] of [["threads", 0], ["threads", 1.5], ["minElements", -1], ["minElements", "9"]] as const) {
    await assert.rejects(castAsync(input0(), "float16", { [key]: value } as CastAsyncOptions), (e: unknown) =>
      e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE" && e.message.includes(key));
  }
});

function input0(): Tensor {
  return Tensor.fromValues([1, 2, 3], "float32");
}

test("the pool can be closed and starts again on the next call", async () => {
  const x = randomTensor(DTYPES.find((t) => t.name === "float32")!, 20_000, 11);
  const want = cast(x, "float8e4m3fnuz");
  sameTensor(await castAsync(x, "float8e4m3fnuz", { minElements: 0 }), want, "before close");
  await closeCastAsyncPool();
  await closeCastAsyncPool();
  sameTensor(await castAsync(x, "float8e4m3fnuz", { minElements: 0 }), want, "after close");
});

test("the idle pool does not keep the process alive; awaited work does", () => {
  const moduleUrl = new URL("../../src/node/cast-async.js", import.meta.url).href;
  const tensorUrl = new URL("../../src/tensor.js", import.meta.url).href;
  const script = `
    import { castAsync } from ${JSON.stringify(moduleUrl)};
    import { Tensor } from ${JSON.stringify(tensorUrl)};
    const x = Tensor.zeros("float32", [1 << 16]);
    (x.data).fill(1.5);
    const y = await castAsync(x, "float16", { minElements: 0, threads: 2 });
    console.log(y.data[0].toString(16), y.data[y.size - 1].toString(16));
  `;
  const file = join(scratch(), "child.mjs");
  writeFileSync(file, script);
  const r = spawnSync(process.execPath, [file], { encoding: "utf8", timeout: 20_000 });
  assert.equal(r.error, undefined, "the child did not exit by itself");
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), "3e00 3e00");
});

/**
 * Fuzzing with fast-check (fixed seeds): corruptions of valid safetensors, .npy, .pb and .onnx
 * files (truncations, byte overwrites, a lying header length, inserted and removed bytes, and
 * header JSON with lying dtypes, shapes and offsets). Whatever the corruption, reading every tensor
 * and converting the file either works or ends in a TensorcastError that names the file; never in
 * another exception, a hang or a partial output file.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { cast, Tensor, TensorcastError } from "../../src/index.js";
import { encodeModel, encodeTensorProto } from "../../src/io/onnx/encode.js";
import { convertFile, inspectFile } from "../../src/node/index.js";
import { encodeNpyHeader } from "../../src/node/io/npy.js";
import { randomFloat32, rawSafetensors, safetensorsBytes, scratch } from "./helpers.js";
import { property } from "../support/suite.js";

const dir = scratch();
let serial = 0;

const f32 = Tensor.fromBytes(randomFloat32(24, 3), "float32", [4, 6]);
const VALID: Record<string, Uint8Array> = {
  safetensors: safetensorsBytes(
    [
      { name: "a", dtype: "float32", shape: [4, 6], bytes: f32.bytes() },
      { name: "b", dtype: "bfloat16", shape: [6], bytes: cast(f32, "bfloat16").bytes().subarray(0, 12) },
      { name: "c", dtype: "float4e2m1", shape: [8], bytes: new Uint8Array([0x12, 0x34, 0x56, 0x78]) },
      { name: "d", dtype: "int64", shape: [2], bytes: new Uint8Array(16).fill(1) },
    ],
    { k: "v" },
  ),
  npy: Buffer.concat([encodeNpyHeader(f32.dtype, [4, 6]), f32.bytes()]),
  pb: encodeTensorProto(f32, { name: "w" }),
  onnx: encodeModel({
    irVersion: 10,
    opsetImports: [{ domain: "", version: 21 }],
    graph: {
      name: "g", nodes: [], inputs: [], outputs: [],
      initializers: [
        { name: "w", tensor: f32 },
        { name: "h", tensor: cast(f32, "float16") },
      ],
    },
  }),
};

type Corruption =
  | { kind: "truncate"; at: number }
  | { kind: "overwrite"; at: number; bytes: number[] }
  | { kind: "insert"; at: number; bytes: number[] }
  | { kind: "remove"; at: number; length: number }
  | { kind: "length"; value: bigint };

const corruption: fc.Arbitrary<Corruption> = fc.oneof(
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("overwrite" as const), at: fc.nat(), bytes: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 8 }) }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), bytes: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 8 }) }),
  fc.record({ kind: fc.constant("remove" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 16 }) }),
  fc.record({ kind: fc.constant("length" as const), value: fc.oneof(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.bigInt({ min: 0n, max: 400n })) }),
);

function corrupt(valid: Uint8Array, c: Corruption): Uint8Array {
  const b = Buffer.from(valid);
  const at = (n: number): number => (b.length === 0 ? 0 : n % (b.length + 1));
  switch (c.kind) {
    case "truncate":
      return b.subarray(0, at(c.at));
    case "overwrite": {
      const p = at(c.at);
      c.bytes.forEach((x, i) => {
        if (p + i < b.length) b[p + i] = x;
      });
      return b;
    }
    case "insert":
      return Buffer.concat([b.subarray(0, at(c.at)), Buffer.from(c.bytes), b.subarray(at(c.at))]);
    case "remove":
      return Buffer.concat([b.subarray(0, at(c.at)), b.subarray(at(c.at) + c.length)]);
    case "length": {
      // safetensors: its u64 header length; elsewhere the same 8 bytes of whatever is there.
      if (b.length >= 8) b.writeBigUInt64LE(c.value, 0);
      return b;
    }
  }
}

/** Reads every tensor of `bytes` and converts it; returns "ok" or the error's code. */
async function survive(format: string, bytes: Uint8Array): Promise<string> {
  const sub = join(dir, `run-${serial++}`);
  mkdirSync(sub);
  const path = join(sub, `in.${format}`);
  writeFileSync(path, bytes);
  const outcomes: string[] = [];
  for (const run of [
    () => inspectFile(path),
    () => convertFile(path, join(sub, `out.${format === "onnx" ? "safetensors" : format}`), { to: "float8e4m3fn", includeIntegers: true }),
    () => convertFile(path, join(sub, `out2.${format}`), { to: "bfloat16", names: format === "onnx" ? ["w"] : undefined, chunkBytes: 64 }),
  ]) {
    try {
      await run();
      outcomes.push("ok");
    } catch (e) {
      if (!(e instanceof TensorcastError)) throw new Error(`not a TensorcastError: ${e instanceof Error ? e.stack : String(e)}`);
      assert.ok(e.message.startsWith(path), `the message does not name the file: ${e.message}`);
      outcomes.push(e.code);
    }
  }
  // Nothing partial: outputs exist only for the runs that succeeded, and no temporary is left.
  const files = readdirSync(sub).sort();
  assert.ok(!files.some((f) => f.endsWith(".tmp")), files.join(", "));
  assert.equal(existsSync(join(sub, `out.${format === "onnx" ? "safetensors" : format}`)), outcomes[1] === "ok");
  assert.equal(existsSync(join(sub, `out2.${format}`)), outcomes[2] === "ok");
  return outcomes.join(",");
}

for (const [format, valid] of Object.entries(VALID)) {
  test(`fuzz ${format}: corruptions end in a TensorcastError naming the file, or in a valid read`, async () => {
    assert.equal(await survive(format, valid), "ok,ok,ok");
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(fc.array(corruption, { minLength: 1, maxLength: 3 }), async (cs) => {
        let bytes = valid;
        for (const c of cs) bytes = corrupt(bytes, c);
        seen.add(await survive(format, bytes));
      }),
      // Every case, in both suites: the test also asks that the corruptions reached both outcomes,
      // which fewer cases do not (30 saw no valid read of the .onnx seed).
      property(60, 0x7c0de + format.length, 60),
    );
    // The corruptions reached both outcomes.
    assert.ok([...seen].some((s) => s.includes("ok")) || format === "npy", [...seen].join(" | "));
    assert.ok([...seen].some((s) => s !== "ok,ok,ok"), [...seen].join(" | "));
  });
}

/** safetensors headers whose JSON is well-formed but lies, generated field by field. */
test("fuzz safetensors headers: lying dtypes, shapes and offsets", async () => {
  const dtypes = fc.constantFrom("F32", "BF16", "F4", "F6_E2M3", "U8", "BOOL", "F8_E8M0", "C64", "Q4", "", "f32");
  const dim = fc.oneof(fc.integer({ min: 0, max: 6 }), fc.constantFrom(-1, 2 ** 53, 2 ** 64, 0.5, 1e308));
  const entry = fc.record({
    dtype: dtypes,
    shape: fc.array(dim, { maxLength: 3 }),
    data_offsets: fc.tuple(fc.integer({ min: -2, max: 40 }), fc.integer({ min: -2, max: 40 })),
  });
  const header = fc.dictionary(fc.oneof(fc.string({ maxLength: 4 }), fc.constant("__metadata__")), entry, { maxKeys: 4 });
  await fc.assert(
    fc.asyncProperty(header, fc.integer({ min: 0, max: 48 }), async (h, dataLength) => {
      const bytes = rawSafetensors(JSON.stringify(h), new Uint8Array(dataLength));
      await survive("safetensors", bytes);
    }),
    property(150, 20261122),
  );
});

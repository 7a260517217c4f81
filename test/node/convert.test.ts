/**
 * convertFile: the bytes it writes are `cast`'s, whatever the chunk size and the number of worker
 * threads; the per-tensor statistics say what happened; tensors are chosen as documented; and it
 * never writes onto its input, never replaces an output unasked, and leaves nothing behind when it
 * fails mid-way.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { linkSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { cast, Tensor, dtype } from "../../src/index.js";
import { encodeTensorProto } from "../../src/io/onnx/encode.js";
import { WireWriter } from "../../src/io/onnx/wire-writer.js";
import { convertFile, exampleCheckpoint, openTensorFile } from "../../src/node/index.js";
import { defaultJobs, inThreadOnly } from "../../src/node/convert/convert.js";
import { removeStaleTemporaries, temporaryPath } from "../../src/node/io/file.js";
import { randomBytes, randomFloat32, rejectsCode, safetensorsBytes, scratch, sha256, type RawTensor } from "./helpers.js";

const dir = scratch();

/** Tensors of several types and odd sizes, with NaNs, infinities and huge values among them. */
function mixed(): RawTensor[] {
  const f = randomFloat32(1000, 7, 600);
  const special = new Float32Array(f.buffer);
  special.set([NaN, Infinity, -Infinity, 1e30, -1e30, 2 ** -140, -0, 464, 480, 57344 + 4096], 100);
  const f16 = cast(Tensor.fromBytes(randomFloat32(64, 8, 70000), "float32", [64]), "float16", {});
  return [
    { name: "a.f32", dtype: "float32", shape: [10, 100], bytes: f },
    { name: "b.f16", dtype: "float16", shape: [8, 8], bytes: f16.bytes() },
    { name: "c.bf16", dtype: "bfloat16", shape: [4, 4], bytes: randomBytes(32, 9) },
    { name: "d.f64", dtype: "float64", shape: [18], bytes: new Uint8Array(new Float64Array(Array.from({ length: 18 }, (_, i) => (i - 8) * 123.456)).buffer) },
    { name: "e.f8", dtype: "float8e5m2", shape: [24], bytes: randomBytes(24, 10) },
    { name: "f.i32", dtype: "int32", shape: [4], bytes: new Uint8Array(new Int32Array([1, -2, 300, 70000]).buffer) },
  ];
}

async function tensorsOf(path: string): Promise<Map<string, Tensor>> {
  const file = await openTensorFile(path);
  try {
    const out = new Map<string, Tensor>();
    for (const t of file.tensors) out.set(t.name, Tensor.fromBytes(await t.read(0, t.size), t.dtype, t.shape));
    return out;
  } finally {
    await file.close();
  }
}

const input = join(dir, "mixed.safetensors");
writeFileSync(input, safetensorsBytes(mixed(), { kept: "yes" }));

const CASES: [to: string, saturate: boolean, threads: boolean][] = [
  ["bfloat16", true, true], ["float16", true, false], ["float8e4m3fn", true, false], ["float8e4m3fn", false, true],
  ["float8e5m2fnuz", false, false], ["float4e2m1", true, false], ["float32", true, false],
];
for (const [to, saturate, threads] of CASES) {
  {
    test(`to ${to}, saturate=${saturate}: every byte is cast's, in chunks${threads ? " and threads" : ""} alike`, async () => {
      const original = await tensorsOf(input);
      const outputs: Buffer[] = [];
      const runs: [number, number | undefined][] = [[0, undefined], [0, 64], ...(threads ? [[2, 200] as [number, number]] : [])];
      for (const [jobs, chunkBytes] of runs) {
        const out = join(dir, `mixed.${to}.${saturate}.${jobs}.${chunkBytes}.safetensors`);
        const report = await convertFile(input, out, { to, saturate, jobs, chunkBytes });
        // Workers start as there is work for them (pool.ts): at least one, at most one per core.
        assert.ok(report.workers <= Math.min(jobs, availableParallelism()) && report.workers >= Math.min(jobs, 1), `${report.workers} workers for --jobs ${jobs}`);
        outputs.push(readFileSync(out));
        const converted = await tensorsOf(out);
        for (const t of report.tensors) {
          const x = original.get(t.name)!;
          const y = converted.get(t.name)!;
          if (t.converted) assert.deepEqual(y.bytes(), cast(x, to, { saturate }).bytes(), `${t.name} (jobs ${jobs}, chunk ${chunkBytes})`);
          else assert.deepEqual(y.bytes(), x.bytes(), t.name);
        }
      }
      for (const o of outputs) assert.deepEqual(o, outputs[0]);
      const file = await openTensorFile(join(dir, `mixed.${to}.${saturate}.0.undefined.safetensors`));
      assert.deepEqual(file.metadata, { kept: "yes" });
      await file.close();
    });
  }
}

test("the statistics of the example checkpoint to float8e4m3fn, saturating and not", async () => {
  const path = join(dir, "example.safetensors");
  writeFileSync(path, exampleCheckpoint());
  const sat = await convertFile(path, join(dir, "example.f8.safetensors"), { to: "float8e4m3fn" });
  const outliers = sat.tensors.find((t) => t.name === "outliers")!;
  // [0.1, 1.5, 448, 464, 480, 1000, 65504, 1e-7, -0, NaN]: 464 rounds (a tie to even), 480, 1000
  // and 65504 saturate to 448, 1e-7 underflows to 0, the NaN stays NaN.
  assert.deepEqual(outliers.stats, {
    count: 10, maxAbsError: 65504 - 448, maxRelError: 1, changed: 6, outOfRange: 3, saturated: 3, nonFinite: 1, becameNonFinite: 0,
  });
  const ids = sat.tensors.find((t) => t.name === "position_ids")!;
  assert.deepEqual([ids.converted, ids.reason, ids.stats], [false, "not floating-point", undefined]);
  const noSat = await convertFile(path, join(dir, "example.f8ns.safetensors"), { to: "float8e4m3fn", saturate: false });
  const o2 = noSat.tensors.find((t) => t.name === "outliers")!;
  assert.deepEqual([o2.stats!.saturated, o2.stats!.outOfRange, o2.stats!.nonFinite, o2.stats!.becameNonFinite, o2.stats!.maxAbsError], [0, 3, 4, 3, 16]);
  const f16 = await convertFile(path, join(dir, "example.f16.safetensors"), { to: "float16" });
  const o3 = f16.tensors.find((t) => t.name === "outliers")!;
  assert.deepEqual([o3.stats!.saturated, o3.stats!.outOfRange, o3.stats!.nonFinite], [0, 0, 1]);
});

test("which tensors are converted: --only, --skip, --include-int, names", async () => {
  const pick = async (opts: Parameters<typeof convertFile>[2], name: string): Promise<[string, boolean, string | undefined][]> => {
    const r = await convertFile(input, join(dir, `pick.${name}.safetensors`), opts);
    return r.tensors.map((t) => [t.name, t.converted, t.reason]);
  };
  assert.deepEqual(await pick({ to: "float16", only: /^[ab]\./ }, "only"), [
    ["a.f32", true, undefined], ["b.f16", false, "already float16"], ["c.bf16", false, "not matched by --only"],
    ["d.f64", false, "not matched by --only"], ["e.f8", false, "not matched by --only"], ["f.i32", false, "not matched by --only"],
  ]);
  assert.deepEqual(await pick({ to: "float16", skip: /f64|f8/, includeIntegers: true }, "skip"), [
    ["a.f32", true, undefined], ["b.f16", false, "already float16"], ["c.bf16", true, undefined],
    ["d.f64", false, "matched by --skip"], ["e.f8", false, "matched by --skip"], ["f.i32", true, undefined],
  ]);
  assert.deepEqual((await pick({ to: "int8", names: ["f.i32"] }, "names")).filter((r) => r[1]), [["f.i32", true, undefined]]);
});

test("IN is never written; OUT is replaced only with force", async () => {
  const before = sha256(input);
  await rejectsCode(convertFile(input, input, { to: "bfloat16", force: true }), "OUTPUT_IS_INPUT", /is the input file/);
  const link = join(dir, "hardlink.safetensors");
  linkSync(input, link);
  await rejectsCode(convertFile(input, link, { to: "bfloat16", force: true }), "OUTPUT_IS_INPUT", /is the input file/);
  const out = join(dir, "exists.safetensors");
  writeFileSync(out, "keep me");
  await rejectsCode(convertFile(input, out, { to: "bfloat16" }), "INVALID_ATTRIBUTE", /already exists; pass --force/);
  assert.equal(readFileSync(out, "utf8"), "keep me");
  await convertFile(input, out, { to: "bfloat16", force: true });
  assert.equal((await tensorsOf(out)).get("a.f32")!.dtype.name, "bfloat16");
  assert.equal(sha256(input), before);
});

test("a failure mid-way leaves neither OUT nor a temporary file", async () => {
  const sub = join(dir, "midway");
  (await import("node:fs")).mkdirSync(sub);
  // A typed TensorProto whose int32_data has 3 entries for dims [4]: found only when read.
  const w = new WireWriter();
  w.int64Field(1, 4).uint32Field(2, dtype("float16").onnx).stringField(8, "w");
  w.fork(5).uint32(0x3c00).uint32(0x4000).uint32(0x4200).join();
  const pb = join(sub, "bad.pb");
  writeFileSync(pb, w.finish());
  const out = join(sub, "bad.out.npy");
  await rejectsCode(convertFile(pb, out, { to: "float32" }), "SHAPE_MISMATCH", /bad\.pb: tensor "w": .*3/);
  assert.deepEqual(readdirSync(sub), ["bad.pb"]);
  // A type the output cannot hold is refused before anything is created.
  const f4 = join(sub, "odd.safetensors");
  writeFileSync(f4, safetensorsBytes([{ name: "odd", dtype: "float32", shape: [3], bytes: randomFloat32(3, 1) }]));
  await rejectsCode(convertFile(f4, join(sub, "odd.f4.safetensors"), { to: "float4e2m1" }), "SHAPE_MISMATCH", /tensor "odd": 3 elements of F4 do not fill whole bytes/);
  assert.deepEqual(readdirSync(sub).sort(), ["bad.pb", "odd.safetensors"]);
  // A valid one works, and the TensorProto round trip agrees with the encoder.
  writeFileSync(pb, encodeTensorProto(Tensor.fromValues([1, 2, 3, 4], "float16"), { name: "w" }));
  await convertFile(pb, out, { to: "float32" });
  assert.ok(existsSync(out));
});

test("temporaries of dead processes are removed; those of live ones are not", async () => {
  const sub = join(dir, "stale");
  (await import("node:fs")).mkdirSync(sub);
  const out = join(sub, "model.safetensors");
  const dead = join(sub, ".model.safetensors.tensorcast-2147483646-deadbeef.tmp");
  const live = temporaryPath(out);
  const other = join(sub, ".other.safetensors.tensorcast-2147483646-deadbeef.tmp");
  for (const p of [dead, live, other]) writeFileSync(p, "partial");
  assert.match(live, /\.model\.safetensors\.tensorcast-\d+-[0-9a-f]{8}\.tmp$/);
  assert.deepEqual(await removeStaleTemporaries(out), [dead]);
  assert.ok(existsSync(live) && existsSync(other) && !existsSync(dead));
});

test("the default thread count: none where every conversion is float32 -> bfloat16 / float16 (cast in place on the calling thread), two for other pairs, none below 8 MiB", async () => {
  const big = join(dir, "big.safetensors");
  // 8 MiB of float32 and a small int64 tensor, which is copied, not converted, so it does not count.
  writeFileSync(big, safetensorsBytes([
    { name: "w", dtype: "float32", shape: [2 << 20], bytes: randomFloat32(2 << 20, 7) },
    { name: "ids", dtype: "int64", shape: [4], bytes: new Uint8Array(32) },
  ]));
  const workers = async (to: string, src = big): Promise<number> => (await convertFile(src, join(dir, `big.${to}.safetensors`), { to, force: true })).workers;
  assert.equal(await workers("bfloat16"), 0);
  assert.equal(await workers("float16"), 0);
  // Two chunks: two workers, or one when the first finished its chunk before the second was read.
  assert.ok([1, Math.min(2, availableParallelism())].includes(await workers("float8e4m3fn")));
  assert.equal(defaultJobs(8 << 20, undefined, false), Math.min(2, availableParallelism()));
  assert.equal(await workers("bfloat16", input), 0); // the mixed file: below 8 MiB
  assert.equal(defaultJobs(1 << 30, 3, true), 3); // what is asked for wins
  assert.equal(inThreadOnly([[dtype("float32"), dtype("bfloat16")], [dtype("float16"), dtype("bfloat16")]]), false);
  assert.equal(inThreadOnly([]), true);
});

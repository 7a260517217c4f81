/**
 * ONNX external data (issue 15, part 3): initializers whose bytes live in side files are read
 * where the location, offset, length and checksum say, as onnxruntime-node reads them; a location
 * that could reach outside the model's folder, or a side file that disagrees with what the model
 * says, is refused before anything is written; a converted model inlines them so it loads from
 * any folder.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { cast, Tensor } from "../../src/index.js";
import { encodeModel } from "../../src/io/onnx/encode.js";
import { WireWriter } from "../../src/io/onnx/wire-writer.js";
import { convertFile, inspectFile, openTensorFile } from "../../src/node/index.js";
import { ortData } from "../support/ort.js";
import { externalTensor as externalMessage, withInitializers } from "./external-model.js";
import { randomFloat32, rejectsCode, scratch } from "./helpers.js";

const root = scratch();
const w1 = Tensor.fromBytes(randomFloat32(6, 3), "float32", [2, 3]);
const w2 = cast(Tensor.fromBytes(randomFloat32(4, 4), "float32", [4]), "float16");

/** An external TensorProto for `t`: dims, data_type, name, then external_data entries and data_location. */
function externalTensor(name: string, t: Tensor, entries: readonly [string, string][], extra?: (w: WireWriter) => void): Uint8Array {
  return externalMessage(name, t.shape, t.dtype.onnx, entries, extra);
}

/** A model computing y = Cast(w1, FLOAT) and z = Cast(w2, FLOAT) from the given initializer messages. */
function model(initializers: readonly Uint8Array[]): Uint8Array {
  const encoded = encodeModel({
    irVersion: 10,
    opsetImports: [{ domain: "", version: 21 }],
    graph: {
      name: "g",
      nodes: [
        { name: "c1", opType: "Cast", domain: "", inputs: ["w1"], outputs: ["y"], attributes: [{ name: "to", type: "INT", value: 1n }] },
        { name: "c2", opType: "Cast", domain: "", inputs: ["w2"], outputs: ["z"], attributes: [{ name: "to", type: "INT", value: 1n }] },
      ],
      initializers: [],
      inputs: [],
      outputs: [{ name: "y", elemType: 1, shape: [2, 3] }, { name: "z", elemType: 1, shape: [4] }],
    },
  });
  return withInitializers(encoded, initializers);
}

/** weights.bin: w1's 24 bytes at 0, w2's 8 bytes at 4096 (a page, as onnx suggests), in `dir`. */
function sideFile(dir: string): Uint8Array {
  const bytes = new Uint8Array(4096 + 8);
  bytes.set(w1.bytes(), 0);
  bytes.set(w2.bytes(), 4096);
  writeFileSync(join(dir, "weights.bin"), bytes);
  return bytes;
}

function folder(name: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A model whose w1 uses `entries1` (default: weights.bin at 0, 24 bytes) and w2 weights.bin at 4096 with its checksum. */
function writeModel(dir: string, entries1: readonly [string, string][] = [["location", "weights.bin"], ["offset", "0"], ["length", "24"]], extra?: (w: WireWriter) => void): string {
  const side = sideFile(dir);
  const sha1 = createHash("sha1").update(side).digest("hex");
  const path = join(dir, "model.onnx");
  writeFileSync(path, model([
    externalTensor("w1", w1, entries1, extra),
    externalTensor("w2", w2, [["location", "weights.bin"], ["offset", "4096"], ["checksum", sha1.toUpperCase()]]),
  ]));
  return path;
}

async function ortOutputs(path: string): Promise<{ y: Float32Array; z: Float32Array }> {
  const session = await ort.InferenceSession.create(path);
  try {
    const out = await session.run({});
    return { y: ortData(out.y) as Float32Array, z: ortData(out.z) as Float32Array };
  } finally {
    await session.release();
  }
}

test("external initializers read the bytes onnxruntime reads: offset, length, to the end, checksum", async () => {
  const path = writeModel(folder("ok"));
  const file = await openTensorFile(path);
  try {
    assert.deepEqual(file.tensors.map((t) => [t.name, t.dtype.name, t.shape]), [["w1", "float32", [2, 3]], ["w2", "float16", [4]]]);
    assert.deepEqual(await file.tensors[0].read(0, 6), w1.bytes());
    assert.deepEqual(await file.tensors[0].read(2, 3), w1.bytes().subarray(8, 20));
    assert.deepEqual(await file.tensors[1].read(0, 4), w2.bytes());
  } finally {
    await file.close();
  }
  // The peer, from the same folder: Cast(w, FLOAT) of the same bits.
  const { y, z } = await ortOutputs(path);
  assert.deepEqual(new Uint8Array(y.buffer, y.byteOffset, y.byteLength), w1.bytes());
  assert.deepEqual(new Uint8Array(z.buffer, z.byteOffset, z.byteLength), cast(w2, "float32").bytes());
  const report = await inspectFile(path);
  assert.deepEqual(report.tensors.map((t) => t.stats?.finite), [6, 4]);
});

test("a converted model inlines its external initializers and runs from another folder", async () => {
  const path = writeModel(folder("convert"));
  const outDir = folder("elsewhere");
  const out = join(outDir, "out.onnx");
  const report = await convertFile(path, out, { to: "float16", names: ["w1"] });
  assert.deepEqual(report.tensors.map((t) => [t.name, t.converted, t.to]), [["w1", true, "float16"], ["w2", false, "float16"]]);
  const { y, z } = await ortOutputs(out);
  assert.deepEqual(new Uint8Array(y.buffer, y.byteOffset, y.byteLength), cast(cast(w1, "float16"), "float32").bytes());
  assert.deepEqual(new Uint8Array(z.buffer, z.byteOffset, z.byteLength), cast(w2, "float32").bytes());
  const back = await openTensorFile(out);
  try {
    assert.deepEqual(back.tensors.map((t) => (t as unknown as { storage: string }).storage), ["raw", "raw"]);
  } finally {
    await back.close();
  }
  // And to safetensors: the side files' bytes, converted.
  const st = join(outDir, "out.safetensors");
  await convertFile(path, st, { to: "bfloat16" });
  const sts = await openTensorFile(st);
  try {
    assert.deepEqual(await sts.tensors[0].read(0, 6), cast(w1, "bfloat16").bytes());
    assert.deepEqual(await sts.tensors[1].read(0, 4), cast(w2, "bfloat16").bytes());
  } finally {
    await sts.close();
  }
});

test("locations that could leave the model's folder, and side files that disagree with the model, are refused", async () => {
  const outside = folder("outside");
  writeFileSync(join(outside, "secret.bin"), new Uint8Array(24));
  const cases: [string, readonly [string, string][], string, RegExp, ((dir: string) => void)?, ((w: WireWriter) => void)?][] = [
    ["parent", [["location", "../outside/secret.bin"]], "INVALID_DATA", /has a "\.\." component/],
    ["absolute", [["location", join(outside, "secret.bin")]], "INVALID_DATA", /is an absolute path/],
    ["link", [["location", "link.bin"]], "INVALID_DATA", /through a symbolic link/, (dir) => symlinkSync(join(outside, "secret.bin"), join(dir, "link.bin"))],
    // A hard link is a second name of the file itself: no path check sees where else it is (onnx 1.23 refuses it too).
    ["hard link", [["location", "hard.bin"]], "INVALID_DATA", /external data file "hard\.bin" has 2 hard links; .* refused, as onnx refuses it/, (dir) => linkSync(join(outside, "secret.bin"), join(dir, "hard.bin"))],
    ["symbolic link to a hard link", [["location", "soft.bin"]], "INVALID_DATA", /external data file "soft\.bin" has 3 hard links/, (dir) => {
      linkSync(join(outside, "secret.bin"), join(dir, "hard.bin"));
      symlinkSync("hard.bin", join(dir, "soft.bin"));
    }],
    ["missing", [["location", "nowhere.bin"]], "IO_ERROR", /cannot open its external data file .*nowhere\.bin \(ENOENT\)/],
    ["past the end", [["location", "weights.bin"], ["offset", "4090"], ["length", "24"]], "INVALID_DATA", /bytes \[4090, 4114\) of weights\.bin, which has 4104 bytes/],
    ["wrong length", [["location", "weights.bin"], ["length", "20"]], "INVALID_DATA", /is 20 bytes, but its type and dims need 24/],
    ["to the end, too long", [["location", "weights.bin"]], "INVALID_DATA", /is 4104 bytes, but its type and dims need 24/],
    ["checksum", [["location", "weights.bin"], ["length", "24"], ["checksum", "0".repeat(40)]], "INVALID_DATA", /has the SHA-1 digest [0-9a-f]{40}, not the checksum 0{40}/],
    ["bad offset", [["location", "weights.bin"], ["offset", "12abc"], ["length", "24"]], "INVALID_DATA", /offset is "12abc", not a decimal byte count/],
    ["unknown key", [["location", "weights.bin"], ["length", "24"], ["sha256", "x"]], "INVALID_DATA", /has the key "sha256"; the keys are location, offset, length, checksum/],
    ["repeated key", [["location", "weights.bin"], ["location", "weights.bin"]], "INVALID_DATA", /gives location twice/],
    ["no location", [["offset", "0"]], "INVALID_DATA", /external_data has no location/],
    ["raw_data too", [["location", "weights.bin"], ["length", "24"]], "INVALID_DATA", /stored externally \(data_location EXTERNAL\) and also has raw_data/, undefined, (w) => w.bytesField(9, new Uint8Array(24))],
  ];
  for (const [name, entries, code, message, prepare, extra] of cases) {
    const dir = folder(`refused-${name.replace(/\W+/g, "-")}`);
    prepare?.(dir);
    const path = writeModel(dir, entries, extra);
    const out = join(dir, "out.safetensors");
    await rejectsCode(openTensorFile(path), code, message);
    await rejectsCode(convertFile(path, out, { to: "float16" }), code, message);
    assert.throws(() => readFileSync(out), { code: "ENOENT" }, `${name}: nothing is written`);
  }
});

/**
 * ONNX files on disk: .pb TensorProtos (raw and typed layouts) and .onnx initializers are listed
 * and read without loading the file; a model written back has exactly the listed initializers
 * converted (their other fields kept) and every other byte as it was, and onnxruntime runs it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { cast, Tensor } from "../../src/index.js";
import { decodeModel, type OnnxModel } from "../../src/io/onnx/model.js";
import { decodeTensorProto } from "../../src/io/onnx/tensorproto.js";
import { encodeModel, encodeTensorProto } from "../../src/io/onnx/encode.js";
import { WireReader } from "../../src/io/onnx/wire.js";
import { WireWriter } from "../../src/io/onnx/wire-writer.js";
import { convertFile, inspectFile, openTensorFile } from "../../src/node/index.js";
import { cli, randomFloat32, rejectsCode, scratch } from "./helpers.js";

const dir = scratch();
const w1 = Tensor.fromBytes(randomFloat32(6, 1), "float32", [2, 3]);
const w2 = cast(Tensor.fromBytes(randomFloat32(4, 2), "float32", [4]), "float16");
const ids = Tensor.fromValues([0, 1, 2], "int64", [3]);
const words = Tensor.fromValues(["a", "b"], "string", [2]);

/** A TensorProto with a doc_string (field 12) after its data, which a rewrite must keep. */
function withDoc(tensor: Tensor, name: string, layout: "raw" | "typed"): Uint8Array {
  const w = new WireWriter();
  w.raw(encodeTensorProto(tensor, { name, layout }));
  w.stringField(12, `doc of ${name}`);
  return w.finish().slice();
}

/**
 * A model whose graph computes y = Cast(w1, to=FLOAT) and z = Cast(w2, to=FLOAT), with four
 * initializers (one typed, one string), a producer name after the graph and a graph doc_string.
 */
function modelBytes(): Uint8Array {
  const base: OnnxModel = {
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
  };
  // Re-open the encoded model to splice in the initializers with doc strings and extra fields.
  const encoded = encodeModel(base);
  const r = new WireReader(encoded, "ModelProto");
  const w = new WireWriter(4096);
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 7) {
      const graph = r.bytes();
      w.fork(7).raw(graph);
      w.bytesField(5, withDoc(w1, "w1", "raw"));
      w.bytesField(5, withDoc(w2, "w2", "typed"));
      w.bytesField(5, encodeTensorProto(ids, { name: "ids" }));
      w.bytesField(5, encodeTensorProto(words, { name: "words" }));
      w.stringField(10, "graph doc");
      w.join();
    } else {
      const start = r.pos;
      r.skip();
      const tagged = new WireWriter();
      tagged.tag(f, r.wireType);
      w.raw(tagged.finish());
      w.raw(encoded.subarray(start, r.pos));
    }
  }
  w.stringField(2, "tensorcast-test");
  return w.finish().slice();
}

test(".onnx initializers are listed and read in place (raw, typed, int64, string)", async () => {
  const path = join(dir, "model.onnx");
  writeFileSync(path, modelBytes());
  const file = await openTensorFile(path);
  try {
    assert.equal(file.format, "onnx");
    assert.deepEqual(file.tensors.map((t) => [t.name, t.dtype.name, t.shape]), [
      ["w1", "float32", [2, 3]], ["w2", "float16", [4]], ["ids", "int64", [3]], ["words", "string", [2]],
    ]);
    assert.deepEqual(await file.tensors[0].read(0, 6), w1.bytes());
    assert.deepEqual(await file.tensors[1].read(0, 4), w2.bytes());
    assert.deepEqual(await file.tensors[2].read(0, 3), ids.bytes());
    await rejectsCode(file.tensors[3].read(0, 2), "UNSUPPORTED_TYPE", /tensor "words": is a STRING tensor/);
  } finally {
    await file.close();
  }
  const report = await inspectFile(path);
  assert.deepEqual(report.tensors.map((t) => t.stats?.finite ?? null), [6, 4, 3, null]);
});

test("writing a model back converts exactly the listed initializers and keeps every other byte", async () => {
  const path = join(dir, "model2.onnx");
  const original = modelBytes();
  writeFileSync(path, original);
  const out = join(dir, "model2.f16.onnx");
  const report = await convertFile(path, out, { to: "float16", names: ["w1"] });
  assert.deepEqual(report.tensors.map((t) => [t.name, t.converted, t.to]), [
    ["w1", true, "float16"], ["w2", false, "float16"], ["ids", false, "int64"], ["words", false, "string"],
  ]);
  const bytes = new Uint8Array(readFileSync(out));
  const model = decodeModel(bytes);
  const byName = new Map(model.graph.initializers.map((i) => [i.name, i.tensor]));
  assert.deepEqual(byName.get("w1")!.bytes(), cast(w1, "float16").bytes());
  assert.equal(byName.get("w1")!.dtype.name, "float16");
  assert.deepEqual(byName.get("w2")!.bytes(), w2.bytes());
  assert.deepEqual(byName.get("words")!.toValues(), ["a", "b"]);
  assert.deepEqual(model.graph.nodes.map((n) => n.name), ["c1", "c2"]);
  // The doc strings, the producer name and the graph's doc string are all still there.
  const text = Buffer.from(bytes).toString("latin1");
  for (const s of ["doc of w1", "doc of w2", "graph doc", "tensorcast-test"]) assert.ok(text.includes(s), s);
  // onnxruntime loads it and computes y = float(float16(w1)).
  const session = await ort.InferenceSession.create(bytes);
  const y = (await session.run({})).y.data as Float32Array;
  assert.deepEqual([...y], cast(cast(w1, "float16"), "float32").toValues());
  // Converting nothing gives the same file back.
  const same = join(dir, "model2.same.onnx");
  await convertFile(path, same, { to: "float16", names: ["w2"] });
  assert.deepEqual(new Uint8Array(readFileSync(same)), original);
});

test("a model is only written back with an explicit list of initializers", async () => {
  const path = join(dir, "model3.onnx");
  writeFileSync(path, modelBytes());
  await rejectsCode(convertFile(path, join(dir, "x.onnx"), { to: "bfloat16" }), "INVALID_ATTRIBUTE", /--initializers/);
  // The CLI converts the whole graph instead (test/io/precision); here it only has to succeed.
  const r = await cli(["convert", path, "--to", "bfloat16", "-o", join(dir, "y.onnx")]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /graph converted to bfloat16/);
  await rejectsCode(convertFile(path, join(dir, "z.onnx"), { to: "bfloat16", names: ["nope"] }), "INVALID_ATTRIBUTE", /has no tensor named "nope"/);
  await rejectsCode(convertFile(path, join(dir, "z.onnx"), { to: "bfloat16", names: ["words"] }), "UNSUPPORTED_TYPE", /tensor "words": string tensors cannot be cast/);
  assert.ok(!existsSync(join(dir, "x.onnx")) && !existsSync(join(dir, "z.onnx")));
  // Another format must hold every tensor: a STRING initializer has nowhere to go in safetensors.
  const st = join(dir, "model3.safetensors");
  await rejectsCode(convertFile(path, st, { to: "bfloat16" }), "UNSUPPORTED_TYPE", /safetensors cannot hold STRING tensors/);
  assert.ok(!existsSync(st));
});

test(".pb files: raw and typed TensorProtos, read, converted and written", async () => {
  for (const layout of ["raw", "typed"] as const) {
    const path = join(dir, `w1.${layout}.pb`);
    writeFileSync(path, withDoc(w1, "w1", layout));
    const out = join(dir, `w1.${layout}.bf16.pb`);
    const report = await convertFile(path, out, { to: "bfloat16" });
    assert.equal(report.tensors[0].stats!.count, 6);
    const back = decodeTensorProto(new Uint8Array(readFileSync(out)));
    assert.equal(back.name, "w1");
    assert.deepEqual(back.tensor.bytes(), cast(w1, "bfloat16").bytes());
    // .pb -> .npy and .safetensors.
    await convertFile(path, join(dir, `w1.${layout}.npy`), { to: "float16" });
    const npy = await openTensorFile(join(dir, `w1.${layout}.npy`));
    assert.deepEqual(await npy.tensors[0].read(0, 6), cast(w1, "float16").bytes());
    await npy.close();
  }
});

test("lying .pb and .onnx files are refused with the file and the tensor", async () => {
  const good = encodeTensorProto(w1, { name: "w1" });
  const cases: [string, Uint8Array, string, RegExp][] = [
    ["truncated", good.subarray(0, good.length - 3), "INVALID_DATA", /claims 24 bytes, past the end/],
    ["raw size", encodeTensorProto(Tensor.fromBytes(w1.bytes().subarray(0, 20), "uint8", [20]), { name: "w1" }).map((b, i) => (i === 3 ? 1 : b)), "SHAPE_MISMATCH", /tensor "w1": raw_data has 20 bytes; shape \[20\] of FLOAT needs 80/],
    ["unknown type", encodeTensorProto(Tensor.fromValues([1], "uint8"), { name: "w" }).map((b, i) => (i === 3 ? 99 : b)), "UNKNOWN_DTYPE", /tensor "w": data_type 99/],
    ["bad name", (() => {
      const w = new WireWriter();
      w.uint32Field(2, 1).tag(8, 2).lengthPrefix(2).raw(new Uint8Array([0xc3, 0x28]));
      return w.finish().slice();
    })(), "INVALID_DATA", /TensorProto: field 8 \(name\) is not valid UTF-8/],
    ["group", new Uint8Array([0x0b, 0x0c]), "INVALID_DATA", /field 1 \(dims\) at byte 0 has wire type start-group, expected varint/],
  ];
  for (const [what, bytes, code, pattern] of cases) {
    const path = join(dir, `bad-${what.replace(/\W+/g, "-")}.pb`);
    writeFileSync(path, bytes);
    const e = await rejectsCode(openTensorFile(path), code, pattern);
    assert.ok(e.message.startsWith(`${path}: `), e.message);
  }
  const noGraph = join(dir, "nograph.onnx");
  writeFileSync(noGraph, new Uint8Array([0x08, 0x07]));
  await rejectsCode(openTensorFile(noGraph), "INVALID_DATA", /has no graph/);
});

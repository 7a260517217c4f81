/**
 * ONNX files on disk are validated whole before anything is read from them: corrupt bytes in a
 * node, nesting past protobuf's limit, non-UTF-8 strings and tensors whose data disagrees with
 * their dims are refused by inspectFile and convertFile (both to another format and back to .onnx,
 * where such bytes used to be copied into the output unseen), naming the file; verifyOnnxFile
 * checks any file the same way; and every model of the ONNX node tests still passes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Tensor } from "../../src/index.js";
import { encodeTensorProto } from "../../src/io/onnx/encode.js";
import { convertFile, inspectFile, openTensorFile } from "../../src/node/index.js";
import { verifyOnnxFile } from "../../src/node/io/onnx.js";
import { askPeer, peerMissing } from "../support/onnx-peer.js";
import { groups, nestedIfs, tensorProto, W } from "../support/protobuf.js";
import { randomFloat32, rejectsCode, ROOT, scratch } from "./helpers.js";

const dir = scratch();
const peerSkip = peerMissing();
const w1 = Tensor.fromBytes(randomFloat32(6, 7), "float32", [2, 3]);
const w2 = Tensor.fromBytes(randomFloat32(4, 8), "float32", [4]);

/** y = Cast(w1, to=FLOAT), with a raw and a typed initializer; `graph` and `model` add fields. */
function modelBytes(graph: W = new W(), model: W = new W()): Uint8Array {
  const cast = new W().len(1, "w1").len(2, "y").len(3, "c1").len(4, "Cast").len(5, new W().len(1, "to").int(20, 2).int(3, 1));
  const output = new W().len(1, "y").len(2, new W().len(1, new W().int(1, 1).len(2, new W().len(1, new W().int(1, 2)).len(1, new W().int(1, 3)))));
  const g = new W()
    .len(1, cast).len(2, "g")
    .len(5, encodeTensorProto(w1, { name: "w1" }))
    .len(5, encodeTensorProto(w2, { name: "w2", layout: "typed" }))
    .len(12, output)
    .append(graph.out);
  return new W().int(1, 8).len(8, new W().len(1, "").int(2, 21)).len(7, g).append(model.out).bytes();
}

/** `bytes` with the first occurrence of `find` overwritten by `by`. */
function patched(bytes: Uint8Array, find: number[], by: number[]): Uint8Array {
  const at = Buffer.from(bytes).indexOf(Buffer.from(find));
  assert.ok(at >= 0);
  const out = bytes.slice();
  out.set(by, at);
  return out;
}

const c1Name = [0x1a, 2, ...Buffer.from("c1")];
const CASES: { what: string; bytes: Uint8Array; code: string; message: RegExp; peerRefuses: boolean }[] = [
  {
    what: "a flipped byte in a NodeProto (the name's tag made fixed32)",
    bytes: patched(modelBytes(), c1Name, [0x1d]),
    code: "INVALID_DATA",
    message: /ModelProto\.graph\.node \(NodeProto at byte \d+\): field 3 \(name\) at byte \d+ has wire type fixed32, expected length-delimited/,
    peerRefuses: true,
  },
  {
    // onnx 1.12 loads this one: its proto2 parser hands the name on as bytes.
    what: "a node name that is not UTF-8",
    bytes: patched(modelBytes(), c1Name, [0x1a, 2, 0xff]),
    code: "INVALID_DATA",
    message: /ModelProto\.graph\.node \(NodeProto at byte \d+\): field 3 \(name\) is not valid UTF-8/,
    peerRefuses: false,
  },
  {
    what: "20,000 nested groups inside a node",
    bytes: modelBytes(new W().len(1, new W().len(4, "Identity").append(groups(20_000).out))),
    code: "INVALID_DATA",
    message: /nested 101 levels deep at byte \d+; protobuf's limit \(its default recursion limit\) is 100/,
    peerRefuses: true,
  },
  {
    what: "subgraphs nested 2,000 deep in a training algorithm",
    bytes: modelBytes(new W(), new W().len(20, new W().len(2, nestedIfs(2000)))),
    code: "INVALID_DATA",
    message: /^[^:]*: ModelProto\.training_info\.algorithm\.\.\.\.\d+ more\.\.\..*nested 101 levels deep/,
    peerRefuses: true,
  },
  {
    what: "an initializer whose float_data disagrees with its dims",
    bytes: modelBytes(new W().len(5, tensorProto(1, [3], "bad").float(4, 1).float(4, 2))),
    code: "SHAPE_MISMATCH",
    message: /ModelProto\.graph\.initializer \(TensorProto at byte \d+\): tensor "bad": float_data holds 2 entries; shape \[3\] of FLOAT needs 3 elements/,
    peerRefuses: true,
  },
];

test("corrupt models are refused by inspect and convert, naming the file, before any output exists", async (t) => {
  let serial = 0;
  for (const c of CASES) {
    const path = join(dir, `bad${serial++}.onnx`);
    writeFileSync(path, c.bytes);
    const starts = new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: `);
    for (const attempt of [
      () => inspectFile(path),
      () => convertFile(path, join(dir, `out${serial}.safetensors`), { to: "float16" }),
      // Back to .onnx converting only w1: everything else used to be copied unread.
      () => convertFile(path, join(dir, `out${serial}.onnx`), { to: "float16", names: ["w1"] }),
    ]) {
      await rejectsCode(attempt(), c.code, starts, c.message);
    }
    assert.ok(!existsSync(join(dir, `out${serial}.safetensors`)) && !existsSync(join(dir, `out${serial}.onnx`)), c.what);
    await rejectsCode(verifyOnnxFile(path, "onnx", "model.onnx"), c.code, /^model\.onnx: /, c.message);
  }
  if (peerSkip) return t.skip(peerSkip);
  const verdicts = askPeer([["model", modelBytes()], ...CASES.map((c) => ["model", c.bytes] as const)]);
  assert.deepEqual(verdicts[0], { parse: "ok", check: "ok" });
  CASES.forEach((c, i) => {
    const v = verdicts[i + 1];
    assert.equal(v.parse !== "ok" || v.check !== "ok", c.peerRefuses, `${c.what}: ${JSON.stringify(v)}`);
  });
});

test("verifyOnnxFile passes a good model and what convert writes from it, and checks .pb files", async () => {
  const path = join(dir, "good.onnx");
  writeFileSync(path, modelBytes());
  await verifyOnnxFile(path, "onnx");
  const out = join(dir, "good.f16.onnx");
  const report = await convertFile(path, out, { to: "float16", names: ["w1", "w2"] });
  assert.deepEqual(report.tensors.map((x) => [x.name, x.to]), [["w1", "float16"], ["w2", "float16"]]);
  await verifyOnnxFile(out, "onnx");
  const pb = join(dir, "w.pb");
  writeFileSync(pb, tensorProto(1, [2], "w").float(4, 1).bytes());
  await rejectsCode(verifyOnnxFile(pb, "pb"), "SHAPE_MISMATCH", /w\.pb: tensor "w": float_data holds 1 entries; shape \[2\] of FLOAT needs 2 elements$/);
  await rejectsCode(openTensorFile(pb), "SHAPE_MISMATCH", /float_data holds 1 entries/);
  // A model read as a TensorProto happens to be well-formed protobuf, but no tensor; the format is checked.
  await rejectsCode(verifyOnnxFile(path, "pb"), "INVALID_DATA", /good\.onnx: tensor ".*": data_type is 0 \(UNDEFINED\)$/);
  await rejectsCode(verifyOnnxFile(path, "npy" as "pb"), "INVALID_ATTRIBUTE", /"npy" is not "onnx" or "pb"/);
});

test("unknown groups, which protobuf skips, do not stop a model from being listed and rewritten", async () => {
  const path = join(dir, "groups.onnx");
  const withGroups = modelBytes(groups(3, 99), groups(2, 98));
  writeFileSync(path, withGroups);
  const file = await openTensorFile(path);
  await file.close();
  assert.deepEqual(file.tensors.map((x) => x.name), ["w1", "w2"]);
  const out = join(dir, "groups.f16.onnx");
  await convertFile(path, out, { to: "float16", names: ["w1"] });
  await verifyOnnxFile(out, "onnx");
});

test("every model of the ONNX node tests (tensorcast's fixtures and libonnx-testdata) passes the validator", async (t) => {
  const roots = [join(ROOT, "test", "fixtures", "onnx-node"), "/usr/share/libonnx-testdata/data/node"].filter(existsSync);
  let checked = 0;
  for (const root of roots) {
    for (const name of readdirSync(root)) {
      const path = join(root, name, "model.onnx");
      if (!existsSync(path)) continue;
      await verifyOnnxFile(path, "onnx");
      checked++;
    }
  }
  t.diagnostic(`${checked} models in ${roots.join(", ")}`);
  assert.ok(checked >= 100, `only ${checked} models found`);
  if (!existsSync("/usr/share/libonnx-testdata/data/node")) t.todo("libonnx-testdata (Debian) is not installed: only the fixtures were checked");
});

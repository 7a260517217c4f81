/**
 * The official ONNX backend node tests for Cast and CastLike (onnx 1.23.1 generators; see
 * test/fixtures/onnx-node/README.md), run through our own .onnx / .pb reader and compared byte for
 * byte. One test per folder, so the runner lists every case by its upstream name.
 *
 * Each model is run node by node: a plain test is a one-node graph, an `_expanded` one is CastLike's
 * function body (a single Cast in every current vector). The opset is the model's own import for
 * the default domain, so the operator version under test is the one the vector was written for.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { decodeFloat, cast, castLike, Tensor, TensorcastError, type CastOptions, type RoundMode } from "../../src/index.js";
import { readCode } from "../../src/dtype/packing.js";
import { decodeModel, opsetVersion, type OnnxModel, type OnnxNode } from "../../src/io/onnx/model.js";
import { decodeTensorProto } from "../../src/io/onnx/tensorproto.js";

// Compiled tests run from build/test/conformance/; the fixtures stay in the source tree.
const FIXTURES = new URL("../../../test/fixtures/onnx-node/", import.meta.url);
const STRING = 8;

const folders = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name.startsWith("test_"))
  .map((d) => d.name)
  .sort();

test("the fixture folder holds the 192 official Cast, CastLike, Reshape and BitCast cases", () => {
  assert.equal(folders.length, 192);
  assert.equal(folders.filter((f) => /^test_cast(like)?_/.test(f)).length, 172);
});

for (const folder of folders) {
  if (/^test_(reshape|bitcast)_/.test(folder)) {
    test(folder, { skip: "not implemented yet" }, () => {});
    continue;
  }
  if (!/^test_cast(like)?_/.test(folder)) continue;
  test(folder, (t) => {
    const dir = new URL(`${folder}/`, FIXTURES);
    const model = decodeModel(readFileSync(new URL("model.onnx", dir)));
    if (involvesStrings(model)) {
      t.skip("string casts: issue #3");
      return;
    }
    const opset = opsetVersion(model, "");
    assert.ok(opset !== undefined, "the model imports no default-domain opset");
    const sets = readdirSync(dir).filter((n) => n.startsWith("test_data_set_")).sort();
    assert.ok(sets.length > 0, "no test_data_set_*");
    for (const set of sets) {
      const { inputs, outputs } = readDataSet(new URL(`${set}/`, dir));
      const results = runGraph(model, inputs, opset);
      assert.equal(results.length, outputs.length, `${set}: output count`);
      results.forEach((actual, k) => {
        const problem = compareTensors(actual, outputs[k]);
        if (problem) assert.fail(`${folder} ${set} output ${k}: ${problem}`);
      });
    }
  });
}

test("a saturate attribute other than 0 or 1 is an error, not a truthy value", () => {
  const model = decodeModel(readFileSync(new URL("test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FN/model.onnx", FIXTURES)));
  const node = model.graph.nodes[0];
  const saturate = node.attributes.find((a) => a.name === "saturate");
  assert.ok(saturate && saturate.type === "INT");
  saturate.value = 2n;
  assert.throws(() => nodeOptions(node, 25), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE");
});

test("the NaN-tolerant comparison accepts any NaN code and rejects everything else", () => {
  const e5m2 = (codes: number[]): Tensor => Tensor.fromBytes(new Uint8Array(codes), "float8e5m2", [codes.length]);
  assert.equal(compareTensors(e5m2([0x7e, 0xff, 0x00]), e5m2([0x7f, 0xfd, 0x00])), undefined);
  assert.match(compareTensors(e5m2([0x7c]), e5m2([0x7e])) ?? "", /element 0: ours 0x7c, expected 0x7e/);
  assert.match(compareTensors(e5m2([0x80]), e5m2([0x00])) ?? "", /element 0/); // -0 is not +0
  const f32 = (words: number[]): Tensor => Tensor.fromStorage(new Float32Array(new Uint32Array(words).buffer), "float32", [words.length]);
  assert.equal(compareTensors(f32([0x7fc00000, 0xffc00001]), f32([0xffc00000, 0x7f800001])), undefined);
  assert.match(compareTensors(f32([0x7f800000]), f32([0x7fc00000])) ?? "", /ours 0x7f800000, expected 0x7fc00000/);
  const u4 = Tensor.fromBytes(new Uint8Array([0x21]), "uint4", [2]);
  assert.match(compareTensors(u4, Tensor.fromBytes(new Uint8Array([0x31]), "uint4", [2])) ?? "", /element 1: ours 0x2, expected 0x3/);
  assert.match(compareTensors(u4, Tensor.fromBytes(new Uint8Array([0x21]), "int4", [2])) ?? "", /data type/);
});

/** Whether any value of the model is a string tensor, or any Cast targets STRING. */
function involvesStrings(model: OnnxModel): boolean {
  const g = model.graph;
  if ([...g.inputs, ...g.outputs].some((v) => v.elemType === STRING)) return true;
  return g.nodes.some((n) => n.attributes.some((a) => a.name === "to" && a.type === "INT" && a.value === BigInt(STRING)));
}

/** input_N.pb and output_N.pb in numeric order. */
function readDataSet(dir: URL): { inputs: Tensor[]; outputs: Tensor[] } {
  const read = (prefix: string): Tensor[] => {
    const out: Tensor[] = [];
    for (let k = 0; existsSync(new URL(`${prefix}_${k}.pb`, dir)); k++) {
      out.push(decodeTensorProto(readFileSync(new URL(`${prefix}_${k}.pb`, dir))).tensor);
    }
    return out;
  };
  return { inputs: read("input"), outputs: read("output") };
}

/** Runs the graph's nodes in order and returns its outputs. */
function runGraph(model: OnnxModel, inputs: Tensor[], opset: number): Tensor[] {
  const g = model.graph;
  const values = new Map<string, Tensor>();
  for (const init of g.initializers) values.set(init.name, init.tensor);
  // Graph inputs that are initializers (IR < 4 style) have no .pb file; the rest are fed in order.
  const fed = g.inputs.filter((v) => !values.has(v.name));
  assert.equal(inputs.length, fed.length, "input .pb count vs graph inputs");
  fed.forEach((v, k) => values.set(v.name, inputs[k]));
  const get = (name: string): Tensor => {
    const x = values.get(name);
    if (!x) throw new Error(`value "${name}" is not computed before it is used`);
    return x;
  };
  for (const node of g.nodes) {
    if (node.domain !== "" && node.domain !== "ai.onnx") throw new Error(`node domain "${node.domain}" is not supported`);
    const opts = nodeOptions(node, opset);
    let y: Tensor;
    switch (node.opType) {
      case "Cast":
        y = cast(get(node.inputs[0]), requiredTo(node), opts);
        break;
      case "CastLike":
        y = castLike(get(node.inputs[0]), get(node.inputs[1]), opts);
        break;
      default:
        throw new Error(`op ${node.opType} is not supported by this runner`);
    }
    values.set(node.outputs[0], y);
  }
  return g.outputs.map((v) => get(v.name));
}

function requiredTo(node: OnnxNode): number {
  const to = node.attributes.find((a) => a.name === "to");
  if (!to || to.type !== "INT") throw new Error("Cast node without an INT `to` attribute");
  return Number(to.value);
}

/** The node's saturate / round_mode attributes as CastOptions; other unknown attributes are errors. */
function nodeOptions(node: OnnxNode, opset: number): CastOptions {
  const opts: CastOptions = { opset };
  for (const a of node.attributes) {
    if (a.name === "to" && node.opType === "Cast") continue;
    if (a.name === "saturate" && a.type === "INT") {
      if (a.value !== 0n && a.value !== 1n) {
        throw new TensorcastError("INVALID_ATTRIBUTE", `saturate must be 0 or 1, got ${a.value}`);
      }
      opts.saturate = a.value === 1n;
    } else if (a.name === "round_mode" && a.type === "STRING") {
      opts.roundMode = a.value as RoundMode; // cast() rejects anything but up / down / nearest
    } else {
      throw new TensorcastError("INVALID_ATTRIBUTE", `${node.opType}: unexpected attribute ${a.name} (${a.type})`);
    }
  }
  return opts;
}

/**
 * undefined when `actual` equals `expected` bit for bit, except that any two NaN codes of the same
 * type are equal (ORT and numpy pick different NaN codes; onnx.md 7). Otherwise a description of
 * the first few differing elements, with both sides' codes.
 */
function compareTensors(actual: Tensor, expected: Tensor): string | undefined {
  if (actual.dtype !== expected.dtype) return `data type ${actual.dtype.name}, expected ${expected.dtype.name}`;
  if (actual.shape.join() !== expected.shape.join()) return `shape [${actual.shape}], expected [${expected.shape}]`;
  const t = actual.dtype;
  if (t.kind === "string") {
    const a = actual.data as string[];
    const e = expected.data as string[];
    const i = a.findIndex((s, k) => s !== e[k]);
    return i < 0 ? undefined : `element ${i}: ours ${JSON.stringify(a[i])}, expected ${JSON.stringify(e[i])}`;
  }
  const ab = actual.bytes();
  const eb = expected.bytes();
  const width = t.packed ? 0 : (t.kind === "complex" ? t.bits / 2 : t.bits) / 8;
  const count = t.kind === "complex" ? 2 * actual.size : actual.size;
  const code = (bytes: Uint8Array, i: number): bigint => {
    if (t.packed) return BigInt(readCode(bytes, t.bits, i));
    let v = 0n;
    for (let b = width - 1; b >= 0; b--) v = (v << 8n) | BigInt(bytes[i * width + b]);
    return v;
  };
  const isNaNCode = (c: bigint): boolean => {
    if (t.kind !== "float" && t.kind !== "complex") return false;
    if (t.bits === 64 || t.name === "complex128") return Number.isNaN(new Float64Array(new BigUint64Array([c]).buffer)[0]);
    if (t.name === "float32" || t.name === "complex64") return Number.isNaN(new Float32Array(new Uint32Array([Number(c)]).buffer)[0]);
    return Number.isNaN(decodeFloat(t.format!, Number(c)));
  };
  const digits = t.packed ? Math.ceil(t.bits / 4) : 2 * width;
  const hex = (c: bigint): string => `0x${c.toString(16).padStart(digits, "0")}`;
  const problems: string[] = [];
  let differing = 0;
  for (let i = 0; i < count; i++) {
    const a = code(ab, i);
    const e = code(eb, i);
    if (a === e || (isNaNCode(a) && isNaNCode(e))) continue;
    differing++;
    if (problems.length < 8) problems.push(`element ${i}: ours ${hex(a)}, expected ${hex(e)}`);
  }
  return differing === 0 ? undefined : `${differing} of ${count} elements differ; ${problems.join("; ")}`;
}

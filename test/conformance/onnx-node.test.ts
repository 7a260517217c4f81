/**
 * The official ONNX backend node tests, run through tensorcast's own .onnx / .pb reader and graph
 * runner (src/node/conformance), one test per folder so the runner lists every case by name:
 * - onnx 1.23.1's Cast, CastLike, Reshape, BitCast, QuantizeLinear, DequantizeLinear and
 *   DynamicQuantizeLinear cases, committed in test/fixtures/onnx-node (the three `_expanded`
 *   DynamicQuantizeLinear cases run its function body: ReduceMin, Min, Sub, Div, Clip, Round and
 *   friends, src/io/onnx/run-function-body.ts);
 * - onnx 1.12's cases from Debian's libonnx-testdata (with the STRING casts), when installed
 *   (.ci/run installs it); listed expected differences must differ exactly as listed.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Tensor, TensorcastError, decodeModel, runModel } from "../../src/index.js";
import { compareTensors } from "../../src/node/conformance/compare.js";
import { EXPECTED_DIFFERENCES } from "../../src/node/conformance/expected.js";
import { findCases, runCase } from "../../src/node/conformance/suite.js";

// Compiled tests run from build/test/conformance/; the fixtures stay in the source tree.
const FIXTURES = fileURLToPath(new URL("../../../test/fixtures/onnx-node/", import.meta.url));
const DEBIAN = "/usr/share/libonnx-testdata/data/node";
const SUITE_FILTER = /^test_(cast|castlike|reshape|bitcast)_/;

const current = findCases(FIXTURES);

test("the fixture folder holds the 225 official Cast, CastLike, Reshape, BitCast and quantization cases", () => {
  assert.equal(current.length, 225);
  assert.equal(current.filter((f) => /test_cast(like)?_[^/]*$/.test(f)).length, 172);
  assert.equal(current.filter((f) => /test_(de|dynamic)?quantizelinear[^/]*$/.test(f)).length, 33);
});

test("every official case runs: none is reported as not implemented (the _expanded DynamicQuantizeLinear cases included)", () => {
  const results = current.map((f) => runCase(f));
  assert.deepEqual(results.filter((r) => r.outcome === "not implemented").map((r) => r.test), []);
  const expanded = results.filter((r) => /^test_dynamicquantizelinear.*_expanded$/.test(r.test));
  assert.deepEqual(expanded.map((r) => [r.test, r.outcome]), [
    ["test_dynamicquantizelinear_expanded", "pass"], ["test_dynamicquantizelinear_max_adjusted_expanded", "pass"],
    ["test_dynamicquantizelinear_min_adjusted_expanded", "pass"],
  ]);
});

for (const folder of current) {
  const name = folder.split("/").pop()!;
  test(`onnx 1.23.1 ${name}`, (t) => {
    const r = runCase(folder);
    if (r.outcome === "not implemented") return t.todo(r.detail);
    assert.equal(r.outcome, "pass", r.detail);
  });
}

const debian = existsSync(DEBIAN) ? findCases(DEBIAN, SUITE_FILTER) : [];
test("Debian's libonnx-testdata (onnx 1.12) is installed", { skip: debian.length ? false : `${DEBIAN} is missing; .ci/run installs it` }, () => {
  assert.equal(debian.length, 40);
});
for (const folder of debian) {
  const name = folder.split("/").pop()!;
  test(`onnx 1.12 ${name}`, (t) => {
    const r = runCase(folder);
    if (r.outcome === "not implemented") return t.todo(r.detail);
    const listed = EXPECTED_DIFFERENCES.some((d) => d.test === name);
    assert.equal(r.outcome, listed ? "expected difference" : "pass", r.detail);
  });
}

test("a saturate attribute other than 0 or 1 is an error, not a truthy value", () => {
  const model = decodeModel(readFileSync(`${FIXTURES}/test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FN/model.onnx`));
  const saturate = model.graph.nodes[0].attributes.find((a) => a.name === "saturate");
  assert.ok(saturate && saturate.type === "INT");
  saturate.value = 2n;
  assert.throws(() => runModel(model, [Tensor.fromValues([1], "float32", [1])]), (e: unknown) =>
    e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE" && /saturate must be 0 or 1, got 2/.test(e.message));
});

test("the NaN-tolerant comparison accepts any NaN code and rejects everything else", () => {
  const e5m2 = (codes: number[]): Tensor => Tensor.fromBytes(new Uint8Array(codes), "float8e5m2", [codes.length]);
  assert.equal(compareTensors(e5m2([0x7e, 0xff, 0x00]), e5m2([0x7f, 0xfd, 0x00])), undefined);
  assert.match(compareTensors(e5m2([0x7c]), e5m2([0x7e]))?.message ?? "", /element 0: ours 0x7c \(Infinity\), expected 0x7e \(NaN\)/);
  assert.match(compareTensors(e5m2([0x80]), e5m2([0x00]))?.message ?? "", /element 0/); // -0 is not +0
  const f32 = (words: number[]): Tensor => Tensor.fromStorage(new Float32Array(new Uint32Array(words).buffer), "float32", [words.length]);
  assert.equal(compareTensors(f32([0x7fc00000, 0xffc00001]), f32([0xffc00000, 0x7f800001])), undefined);
  assert.match(compareTensors(f32([0x7f800000]), f32([0x7fc00000]))?.message ?? "", /ours 0x7f800000/);
  const u4 = Tensor.fromBytes(new Uint8Array([0x21]), "uint4", [2]);
  assert.match(compareTensors(u4, Tensor.fromBytes(new Uint8Array([0x31]), "uint4", [2]))?.message ?? "", /element 1: ours 0x2 \(2\), expected 0x3 \(3\)/);
  assert.match(compareTensors(u4, Tensor.fromBytes(new Uint8Array([0x21]), "int4", [2]))?.message ?? "", /data type/);
  const s = (v: string[]) => Tensor.fromValues(v, "string");
  assert.match(compareTensors(s(["a", "b"]), s(["a", "c"]))?.message ?? "", /element 1: ours "b", expected "c"/);
});

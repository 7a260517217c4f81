/**
 * Messages quote big integers exactly (issue 24): an .npy dimension of 9007199254740993 printed as
 * "Infinity", an ONNX dimension 2^62 as 4611686018427388000 (JS's shortest form of the double,
 * which is another integer). Now the digits the file holds, BigInt-exact.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { decodeTensorProto, Tensor } from "../../src/index.js";
import { openTensorFile } from "../../src/node/index.js";
import { describe, exactNumber } from "../../src/args.js";
import { throwsCode } from "../support/assertions.js";
import { tensorProto, W } from "../support/protobuf.js";
import { rejectsCode, scratch } from "./helpers.js";

const dir = scratch();

/** An .npy file (version 1.0, float32) whose header gives `shape` as written. */
function npy(name: string, shape: string): string {
  let h = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shape}, }`;
  h += " ".repeat((64 - ((10 + h.length + 1) % 64)) % 64) + "\n";
  const bytes = new Uint8Array(10 + h.length);
  bytes.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, h.length & 0xff, h.length >> 8]);
  for (let i = 0; i < h.length; i++) bytes[10 + i] = h.charCodeAt(i);
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

test("an .npy dimension past 2^53 is quoted with its digits, not Infinity", async () => {
  await rejectsCode(openTensorFile(npy("a.npy", "(9007199254740993,)")), "INVALID_SHAPE", /shape \(9007199254740993,\) has 9007199254740993;/);
  await rejectsCode(openTensorFile(npy("b.npy", "(0, 123456789012345678901234567890L)")), "INVALID_SHAPE",
    /shape \(0, 123456789012345678901234567890\) has 123456789012345678901234567890;/);
});

test("a TensorProto dimension 2^62 (and 2^62 + 1, -2^63) is quoted exactly in dims and in the bad dimension", () => {
  throwsCode(() => decodeTensorProto(tensorProto(1, [2 ** 62]).bytes()), "INVALID_SHAPE", /dims \[4611686018427387904\] hold 4611686018427387904;/);
  const w = new W().int(1, (1n << 62n) + 1n).int(1, 0).int(1, -(1n << 63n)).int(2, 1);
  throwsCode(() => decodeTensorProto(w.bytes()), "INVALID_SHAPE", /dims \[4611686018427387905, 0, -9223372036854775808\] hold 4611686018427387905;/);
});

test("describe and shape messages print integers past 2^53 exactly", () => {
  assert.equal(exactNumber(2 ** 62), "4611686018427387904");
  assert.equal(exactNumber(-(2 ** 60)), "-1152921504606846976");
  assert.equal(exactNumber(1e21), "1e+21");
  assert.equal(exactNumber(1.5), "1.5");
  assert.equal(describe(2 ** 53 + 2), "9007199254740994");
  throwsCode(() => Tensor.zeros("float32", [2 ** 62]), "INVALID_SHAPE", /dimension 0 of shape \[4611686018427387904\] is 4611686018427387904;/);
});

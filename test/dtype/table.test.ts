import { test } from "node:test";
import assert from "node:assert/strict";
import { DTYPES, dtype, TensorcastError } from "../../src/index.js";

test("28 data types with their ONNX numbers 1..28", () => {
  assert.equal(DTYPES.length, 28);
  DTYPES.forEach((t, i) => assert.equal(t.onnx, i + 1));
});

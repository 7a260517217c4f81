/**
 * The type lists and attributes of every QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear
 * version, written out in full from the onnx 1.23.1 schemas (onnx.defs.get_all_schemas_with_history),
 * not accumulated as src/ops/opsets.ts builds them.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  DEQUANTIZELINEAR_VERSIONS, DYNAMICQUANTIZELINEAR_VERSIONS, QUANTIZELINEAR_VERSIONS, quantizeOperatorVersion,
  type DTypeName, type QuantizeOperatorVersion,
} from "../../src/index.js";
import { throwsCode } from "../support/assertions.js";

const F8: DTypeName[] = ["float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"];
const FLOATS: DTypeName[] = ["float32", "float16", "bfloat16"];
type Row = [inputs: DTypeName[], scales: DTypeName[], outputs: DTypeName[], attributes: string[]];

const Q: Record<number, Row> = {
  10: [["float32", "int32"], ["float32"], ["int8", "uint8"], []],
  13: [["float32", "int32"], ["float32"], ["int8", "uint8"], ["axis"]],
  19: [[...FLOATS, "int32"], [...FLOATS, "int32"], ["int8", "uint8", ...F8], ["axis", "saturate"]],
  21: [[...FLOATS, "int32"], [...FLOATS, "int32"], ["int8", "uint8", "int16", "uint16", ...F8, "uint4", "int4"], ["axis", "saturate", "block_size", "output_dtype"]],
  23: [[...FLOATS, "int32"], [...FLOATS, "int32"], ["int8", "uint8", "int16", "uint16", ...F8, "uint4", "int4", "float4e2m1"], ["axis", "saturate", "block_size", "output_dtype", "precision"]],
  24: [[...FLOATS, "int32"], [...FLOATS, "int32", "float8e8m0"], ["int8", "uint8", "int16", "uint16", ...F8, "uint4", "int4", "float4e2m1"], ["axis", "saturate", "block_size", "output_dtype", "precision"]],
  25: [[...FLOATS, "int32"], [...FLOATS, "int32", "float8e8m0"], ["int8", "uint8", "int16", "uint16", ...F8, "uint4", "int4", "float4e2m1", "uint2", "int2"], ["axis", "saturate", "block_size", "output_dtype", "precision"]],
  28: [[...FLOATS, "int32"], [...FLOATS, "int32", "float8e8m0"], ["int8", "uint8", "int16", "uint16", ...F8, "uint4", "int4", "float4e2m1", "uint2", "int2", "float6e2m3", "float6e3m2"], ["axis", "saturate", "block_size", "output_dtype", "precision"]],
};
const DQ: Record<number, Row> = {
  10: [["int8", "uint8", "int32"], ["float32"], ["float32"], []],
  13: [["int8", "uint8", "int32"], ["float32"], ["float32"], ["axis"]],
  19: [["int8", "uint8", "int32", ...F8], FLOATS, FLOATS, ["axis"]],
  21: [["int8", "uint8", "int16", "uint16", "int32", ...F8, "uint4", "int4"], FLOATS, FLOATS, ["axis", "block_size"]],
  23: [["int8", "uint8", "int16", "uint16", "int32", ...F8, "uint4", "int4", "float4e2m1"], FLOATS, FLOATS, ["axis", "block_size", "output_dtype"]],
  24: [["int8", "uint8", "int16", "uint16", "int32", ...F8, "uint4", "int4", "float4e2m1"], [...FLOATS, "float8e8m0"], FLOATS, ["axis", "block_size", "output_dtype"]],
  25: [["int8", "uint8", "int16", "uint16", "int32", ...F8, "uint4", "int4", "float4e2m1", "uint2", "int2"], [...FLOATS, "float8e8m0"], FLOATS, ["axis", "block_size", "output_dtype"]],
  28: [["int8", "uint8", "int16", "uint16", "int32", ...F8, "uint4", "int4", "float4e2m1", "uint2", "int2", "float6e2m3", "float6e3m2"], [...FLOATS, "float8e8m0"], FLOATS, ["axis", "block_size", "output_dtype"]],
};

function check(versions: readonly QuantizeOperatorVersion[], table: Record<number, Row>, op: string): void {
  assert.deepEqual(versions.map((v) => v.version), Object.keys(table).map(Number), op);
  for (const v of versions) {
    const [inputs, scales, outputs, attributes] = table[v.version];
    const sorted = (xs: Iterable<string>): string[] => [...xs].sort();
    assert.deepEqual(sorted(v.inputs), sorted(inputs), `${op}-${v.version} inputs`);
    assert.deepEqual(sorted(v.scales), sorted(scales), `${op}-${v.version} scales`);
    assert.deepEqual(sorted(v.outputs), sorted(outputs), `${op}-${v.version} outputs`);
    assert.deepEqual(sorted(v.attributes), sorted(attributes), `${op}-${v.version} attributes`);
  }
}

test("QuantizeLinear 10 .. 28: every version's types and attributes", () => {
  check(QUANTIZELINEAR_VERSIONS, Q, "QuantizeLinear");
  // x and y_scale share T1 at 19 and 21 only.
  assert.deepEqual(QUANTIZELINEAR_VERSIONS.filter((v) => v.scaleIsInputType).map((v) => v.version), [19, 21]);
});

test("DequantizeLinear 10 .. 28: every version's types and attributes", () => {
  check(DEQUANTIZELINEAR_VERSIONS, DQ, "DequantizeLinear");
  assert.deepEqual(DEQUANTIZELINEAR_VERSIONS.filter((v) => v.outputIsScaleType).map((v) => v.version), [19, 21]);
});

test("DynamicQuantizeLinear 11, and the version an opset runs", () => {
  check(DYNAMICQUANTIZELINEAR_VERSIONS, { 11: [["float32"], ["float32"], ["uint8"], []] }, "DynamicQuantizeLinear");
  assert.equal(quantizeOperatorVersion("QuantizeLinear", 22).version, 21);
  assert.equal(quantizeOperatorVersion("DequantizeLinear", 27).version, 25);
  assert.equal(quantizeOperatorVersion("DynamicQuantizeLinear", 28).version, 11);
  throwsCode(() => quantizeOperatorVersion("QuantizeLinear", 9), "INVALID_OPSET", /QuantizeLinear does not exist at opset 9; its versions are 10, 13, 19, 21, 23, 24, 25, 28/);
  throwsCode(() => quantizeOperatorVersion("Cast" as never, 21), "INVALID_ATTRIBUTE", /quantizeOperatorVersion knows QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear/);
});

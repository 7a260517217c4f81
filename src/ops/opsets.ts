/**
 * Which types and attributes each version of each operator allows, from the ONNX schemas
 * (onnx/defs/tensor/old.cc and defs.cc). A model's opset selects the newest operator version at or
 * below it: opset 20 runs Cast-19.
 */
import { describe } from "../args.js";
import { TensorcastError } from "../errors.js";
import type { DTypeName } from "../dtype/table.js";

export type OperatorName = "Cast" | "CastLike" | "Reshape";

export interface OperatorVersion {
  readonly op: OperatorName;
  /** The `since_version` of this definition. */
  readonly version: number;
  readonly types: ReadonlySet<DTypeName>;
  readonly attributes: ReadonlySet<string>;
}

const CAST_1: DTypeName[] = [
  "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
];
/** Types each Cast version adds to the one before it. */
const CAST_ADDS: [version: number, adds: DTypeName[], attributes: string[]][] = [
  [1, CAST_1, ["to"]],
  [6, [], []], // `to` becomes an INT attribute
  [9, ["string"], []],
  [13, ["bfloat16"], []],
  [19, ["float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"], ["saturate"]],
  [21, ["uint4", "int4"], []],
  [23, ["float4e2m1"], []],
  [24, ["float8e8m0"], ["round_mode"]],
  [25, ["uint2", "int2"], []],
  [28, ["float6e2m3", "float6e3m2"], []],
];

/** The types and attributes of Cast as of version `v` (CastLike shares them, minus `to`). */
function build(op: OperatorName, versions: number[]): OperatorVersion[] {
  return versions.map((version) => {
    const types = new Set<DTypeName>();
    const attributes = new Set<string>();
    for (const [since, adds, attrs] of CAST_ADDS) {
      if (since > version) break;
      adds.forEach((t) => types.add(t));
      attrs.forEach((a) => (op === "Cast" || a !== "to") && attributes.add(a));
    }
    return { op, version, types, attributes };
  });
}

/** Cast 1, 6, 9, 13, 19, 21, 23, 24, 25, 28. */
export const CAST_VERSIONS: readonly OperatorVersion[] = build("Cast", [1, 6, 9, 13, 19, 21, 23, 24, 25, 28]);
/** CastLike 15 (types of Cast-13), 19, 21, 23, 24, 25; CastLike has no version 28. */
export const CASTLIKE_VERSIONS: readonly OperatorVersion[] = build("CastLike", [15, 19, 21, 23, 24, 25]);

/** The newest opset tensorcast knows. */
export const LATEST_OPSET = 28;

/** Reshape-5's types: every IR 3 type (string, bool and complex included, bfloat16 not). */
const RESHAPE_5: DTypeName[] = [
  "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
  "string", "complex64", "complex128",
];
/** Types and attributes each Reshape version adds to the one before it (onnx.md section 5). */
const RESHAPE_ADDS: [version: number, adds: DTypeName[], attributes: string[]][] = [
  // Reshape-1 takes `shape` as an INTS attribute (and a legacy `consumed_inputs`); 5 makes it input 1.
  [1, ["float16", "float32", "float64"], ["shape", "consumed_inputs"]],
  [5, RESHAPE_5, []],
  [13, ["bfloat16"], []],
  [14, [], ["allowzero"]],
  [19, ["float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"], []],
  [21, ["uint4", "int4"], []],
  [23, ["float4e2m1"], []],
  [24, ["float8e8m0"], []],
  [25, ["uint2", "int2"], []],
];

/** Reshape 1, 5, 13, 14, 19, 21, 23, 24, 25. No version accepts float6 (Reshape-25 predates it). */
export const RESHAPE_VERSIONS: readonly OperatorVersion[] = RESHAPE_ADDS.map(([version]) => {
  const types = new Set<DTypeName>();
  const attributes = new Set<string>();
  for (const [since, adds, attrs] of RESHAPE_ADDS) {
    if (since > version) break;
    adds.forEach((t) => types.add(t));
    attrs.forEach((a) => attributes.add(a));
  }
  if (version >= 5) ["shape", "consumed_inputs"].forEach((a) => attributes.delete(a));
  return { op: "Reshape" as const, version, types, attributes };
});

const VERSIONS: Readonly<Record<OperatorName, readonly OperatorVersion[]>> = {
  Cast: CAST_VERSIONS,
  CastLike: CASTLIKE_VERSIONS,
  Reshape: RESHAPE_VERSIONS,
};

/**
 * The newest version of `op` at or below `opset`: opset 20 runs Cast-19.
 * @throws TensorcastError INVALID_OPSET below the operator's first version or for a non-integer.
 */
export function operatorVersion(op: OperatorName, opset: number): OperatorVersion {
  return newestVersion("operatorVersion", VERSIONS, op, opset);
}

/** The entry of `table[op]` with the newest `version` at or below `opset`; `fn` names the caller in errors. */
function newestVersion<T extends { readonly version: number }>(
  fn: string, table: Readonly<Record<string, readonly T[]>>, op: string, opset: number,
): T {
  const versions = typeof op === "string" && Object.hasOwn(table, op) ? table[op] : undefined;
  if (!versions) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `${fn} knows ${Object.keys(table).join(", ")}; got ${typeof op === "string" ? JSON.stringify(op.slice(0, 40)) : typeof op}`);
  }
  if (!Number.isInteger(opset) || opset < versions[0].version) {
    throw new TensorcastError(
      "INVALID_OPSET",
      `${op} does not exist at opset ${describe(opset)}; its versions are ${versions.map((v) => v.version).join(", ")}`,
    );
  }
  let found = versions[0];
  for (const v of versions) if (v.version <= opset) found = v;
  return found;
}

/** The quantization operators, whose type lists are per role rather than one list. */
export type QuantizeOperatorName = "QuantizeLinear" | "DequantizeLinear" | "DynamicQuantizeLinear";

/**
 * One version of QuantizeLinear, DequantizeLinear or DynamicQuantizeLinear, from the onnx 1.23.1
 * schemas (onnx/defs/quantization/defs.cc and old.cc; version 28 from the 1.23.1 wheel).
 */
export interface QuantizeOperatorVersion {
  readonly op: QuantizeOperatorName;
  readonly version: number;
  /** Types of the input `x`. */
  readonly inputs: ReadonlySet<DTypeName>;
  /** Types of the scale (QuantizeLinear 19 and 21: the input's own type, see `scaleIsInputType`). */
  readonly scales: ReadonlySet<DTypeName>;
  /** Types of the output `y` (QuantizeLinear: also the zero point's). */
  readonly outputs: ReadonlySet<DTypeName>;
  /** QuantizeLinear 19, 21: x and y_scale share type T1. */
  readonly scaleIsInputType: boolean;
  /** DequantizeLinear 19, 21: the output has the scale's type. */
  readonly outputIsScaleType: boolean;
  readonly attributes: ReadonlySet<string>;
}

const F8_TYPES: DTypeName[] = ["float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"];
const HALF_TYPES: DTypeName[] = ["float32", "float16", "bfloat16"];
/** [version, input types added, scale types added, output types added, attributes added]. */
type QuantAdds = [version: number, inputs: DTypeName[], scales: DTypeName[], outputs: DTypeName[], attributes: string[]];
const QUANTIZE_ADDS: QuantAdds[] = [
  [10, ["float32", "int32"], ["float32"], ["int8", "uint8"], []],
  [13, [], [], [], ["axis"]],
  // x and y_scale become one type T1 (scale types are x's; int32 included).
  [19, ["float16", "bfloat16"], ["float16", "bfloat16", "int32"], F8_TYPES, ["saturate"]],
  [21, [], [], ["int16", "uint16", "uint4", "int4"], ["block_size", "output_dtype"]],
  [23, [], [], ["float4e2m1"], ["precision"]],
  [24, [], ["float8e8m0"], [], []],
  [25, [], [], ["uint2", "int2"], []],
  [28, [], [], ["float6e2m3", "float6e3m2"], []],
];
const DEQUANTIZE_ADDS: QuantAdds[] = [
  [10, ["int8", "uint8", "int32"], ["float32"], ["float32"], []],
  [13, [], [], [], ["axis"]],
  // The output is the scale's type.
  [19, F8_TYPES, ["float16", "bfloat16"], ["float16", "bfloat16"], []],
  [21, ["int16", "uint16", "uint4", "int4"], [], [], ["block_size"]],
  [23, ["float4e2m1"], [], [], ["output_dtype"]],
  [24, [], ["float8e8m0"], [], []],
  [25, ["uint2", "int2"], [], [], []],
  [28, ["float6e2m3", "float6e3m2"], [], [], []],
];

function buildQuant(op: QuantizeOperatorName, adds: QuantAdds[]): QuantizeOperatorVersion[] {
  return adds.map(([version]) => {
    const inputs = new Set<DTypeName>();
    const scales = new Set<DTypeName>();
    const outputs = new Set<DTypeName>();
    const attributes = new Set<string>();
    for (const [since, i, s, o, a] of adds) {
      if (since > version) break;
      i.forEach((t) => inputs.add(t));
      s.forEach((t) => scales.add(t));
      o.forEach((t) => outputs.add(t));
      a.forEach((t) => attributes.add(t));
    }
    const tied = version === 19 || version === 21;
    return {
      op, version, inputs, scales, outputs, attributes,
      scaleIsInputType: op === "QuantizeLinear" && tied,
      outputIsScaleType: op === "DequantizeLinear" && tied,
    };
  });
}

/** QuantizeLinear 10, 13, 19, 21, 23, 24, 25, 28. */
export const QUANTIZELINEAR_VERSIONS: readonly QuantizeOperatorVersion[] = buildQuant("QuantizeLinear", QUANTIZE_ADDS);
/** DequantizeLinear 10, 13, 19, 21, 23, 24, 25, 28. */
export const DEQUANTIZELINEAR_VERSIONS: readonly QuantizeOperatorVersion[] = buildQuant("DequantizeLinear", DEQUANTIZE_ADDS);
/** DynamicQuantizeLinear 11: float32 in, uint8 out, float32 scale. */
export const DYNAMICQUANTIZELINEAR_VERSIONS: readonly QuantizeOperatorVersion[] = [{
  op: "DynamicQuantizeLinear", version: 11, inputs: new Set(["float32"]), scales: new Set(["float32"]),
  outputs: new Set(["uint8"]), scaleIsInputType: false, outputIsScaleType: false, attributes: new Set(),
}];
/** Float types DequantizeLinear 23+ can output (its T3). */
export const DEQUANTIZE_OUTPUT_TYPES: ReadonlySet<DTypeName> = new Set(HALF_TYPES);

const QUANT_VERSIONS: Readonly<Record<QuantizeOperatorName, readonly QuantizeOperatorVersion[]>> = {
  QuantizeLinear: QUANTIZELINEAR_VERSIONS,
  DequantizeLinear: DEQUANTIZELINEAR_VERSIONS,
  DynamicQuantizeLinear: DYNAMICQUANTIZELINEAR_VERSIONS,
};

/**
 * The newest version of a quantization operator at or below `opset`: opset 22 runs
 * QuantizeLinear-21.
 * @throws TensorcastError INVALID_OPSET below the operator's first version or for a non-integer.
 */
export function quantizeOperatorVersion(op: QuantizeOperatorName, opset: number): QuantizeOperatorVersion {
  return newestVersion("quantizeOperatorVersion", QUANT_VERSIONS, op, opset);
}

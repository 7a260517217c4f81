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
  const versions = typeof op === "string" && Object.hasOwn(VERSIONS, op) ? VERSIONS[op] : undefined;
  if (!versions) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `operatorVersion knows ${Object.keys(VERSIONS).join(", ")}; got ${typeof op === "string" ? JSON.stringify(op.slice(0, 40)) : typeof op}`);
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

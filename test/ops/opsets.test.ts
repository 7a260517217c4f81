/**
 * Versions and attributes: every Cast and CastLike version accepts exactly its own type list and
 * attributes, and says which version it is and what it allows when it refuses.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { throwsCode } from "../support/assertions.js";
import {
  CAST_VERSIONS, CASTLIKE_VERSIONS, DTYPES, Tensor, cast, castLike, dtype, operatorVersion,
  type DTypeName,
} from "../../src/index.js";

/** The type lists of onnx.md 2.1, written out in full per version (not accumulated like src does). */
const BASE: DTypeName[] = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"];
const F8: DTypeName[] = ["float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"];
const CAST_TYPES: Record<number, DTypeName[]> = {
  1: BASE,
  6: BASE,
  9: [...BASE, "string"],
  13: [...BASE, "string", "bfloat16"],
  19: [...BASE, "string", "bfloat16", ...F8],
  21: [...BASE, "string", "bfloat16", ...F8, "uint4", "int4"],
  23: [...BASE, "string", "bfloat16", ...F8, "uint4", "int4", "float4e2m1"],
  24: [...BASE, "string", "bfloat16", ...F8, "uint4", "int4", "float4e2m1", "float8e8m0"],
  25: [...BASE, "string", "bfloat16", ...F8, "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2"],
  28: [...BASE, "string", "bfloat16", ...F8, "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2", "float6e2m3", "float6e3m2"],
};


test("Cast versions and their type lists", () => {
  assert.deepEqual(CAST_VERSIONS.map((v) => v.version), [1, 6, 9, 13, 19, 21, 23, 24, 25, 28]);
  for (const v of CAST_VERSIONS) assert.deepEqual([...v.types].sort(), [...CAST_TYPES[v.version]].sort(), `Cast-${v.version}`);
});

test("CastLike versions: 15 has Cast-13's types, later ones Cast's; no CastLike-28", () => {
  assert.deepEqual(CASTLIKE_VERSIONS.map((v) => v.version), [15, 19, 21, 23, 24, 25]);
  assert.deepEqual([...CASTLIKE_VERSIONS[0].types].sort(), [...CAST_TYPES[13]].sort());
  for (const v of CASTLIKE_VERSIONS.slice(1)) assert.deepEqual([...v.types].sort(), [...CAST_TYPES[v.version]].sort());
  assert.equal(operatorVersion("CastLike", 28).version, 25);
  assert.ok(!CASTLIKE_VERSIONS.some((v) => v.attributes.has("to")));
});

test("an opset selects the newest version at or below it", () => {
  assert.equal(operatorVersion("Cast", 5).version, 1);
  assert.equal(operatorVersion("Cast", 20).version, 19);
  assert.equal(operatorVersion("Cast", 26).version, 25);
  assert.equal(operatorVersion("Cast", 99).version, 28);
  throwsCode(() => operatorVersion("Cast", 0), "INVALID_OPSET", /versions are 1, 6, 9/);
  throwsCode(() => operatorVersion("CastLike", 14), "INVALID_OPSET", /CastLike does not exist at opset 14/);
  throwsCode(() => operatorVersion("Cast", 1.5), "INVALID_OPSET");
});

test("every version accepts exactly its own types, as input and as target, and names itself when refusing", () => {
  const numeric = DTYPES.filter((t) => t.kind !== "string" && t.kind !== "complex");
  const one = (t: (typeof numeric)[number]) => Tensor.zeros(t, [1]);
  for (const v of CAST_VERSIONS) {
    const opset = v.version;
    const to = (t: DTypeName) => (opset < 6 ? dtype(t).onnxName : t);
    for (const t of numeric) {
      const allowed = CAST_TYPES[opset].includes(t.name);
      if (allowed) {
        cast(one(t), to("float32"), { opset });
        cast(one(dtype("float32")), to(t.name), { opset });
      } else {
        throwsCode(() => cast(one(t), to("float32"), { opset }), "UNSUPPORTED_TYPE",
          new RegExp(`Cast-${opset} does not accept ${t.name} as input type; it allows float16, float32`));
        throwsCode(() => cast(one(dtype("float32")), to(t.name), { opset }), "UNSUPPORTED_TYPE",
          new RegExp(`Cast-${opset} does not accept ${t.name} as target type`));
      }
    }
  }
  for (const v of CASTLIKE_VERSIONS) {
    for (const t of numeric) {
      const run = () => castLike(one(dtype("float32")), one(t), { opset: v.version });
      if (v.types.has(t.name)) run();
      else throwsCode(run, "UNSUPPORTED_TYPE", new RegExp(`CastLike-${v.version} does not accept ${t.name}`));
    }
  }
});

test("Cast-1 takes `to` as a type-name string; later versions take any spelling", () => {
  const x = Tensor.fromValues([1.5], "float32");
  assert.deepEqual(cast(x, "FLOAT16", { opset: 1 }).toValues(), [1.5]);
  assert.deepEqual(cast(x, "float16", { opset: 5 }).toValues(), [1.5]);
  throwsCode(() => cast(x, 10, { opset: 1 }), "INVALID_ATTRIBUTE", /Cast-1 takes `to` as a type-name string/);
  throwsCode(() => cast(x, dtype("float16"), { opset: 1 }), "INVALID_ATTRIBUTE", /got the DType float16/);
  assert.deepEqual(cast(x, 10, { opset: 6 }).dtype.name, "float16");
});

test("saturate exists from version 19 and round_mode from 24; given earlier, it is an error", () => {
  const x = Tensor.fromValues([1.5], "float32");
  throwsCode(() => cast(x, "float16", { opset: 13, saturate: true }), "INVALID_ATTRIBUTE",
    /Cast-13 has no saturate attribute \(it exists from Cast-19\)/);
  throwsCode(() => cast(x, "float8e4m3fn", { opset: 23, roundMode: "up" }), "INVALID_ATTRIBUTE",
    /Cast-23 has no round_mode attribute \(it exists from Cast-24\); its attributes are to, saturate/);
  throwsCode(() => castLike(x, Tensor.zeros("float16", [0]), { opset: 15, saturate: false }), "INVALID_ATTRIBUTE",
    /CastLike-15 has no saturate attribute/);
  cast(x, "float8e4m3fn", { opset: 19, saturate: false });
  cast(x, "float8e8m0", { opset: 24, roundMode: "down" });
});

test("saturate and round_mode given for targets they do not affect are accepted and ignored", () => {
  const x = Tensor.fromValues([1e6, 1.5], "float32");
  assert.deepEqual(cast(x, "float16", { saturate: false }).toValues(), [Infinity, 1.5]);
  assert.deepEqual(cast(x, "float16", { saturate: true }).toValues(), [Infinity, 1.5]);
  assert.deepEqual(cast(x, "int32", { roundMode: "down" }).toValues(), [1000000, 1]);
  assert.deepEqual(cast(x, "float8e4m3fn", { roundMode: "down" }).toValues(), [448, 1.5]);
});

test("CastLike honours round_mode (the upstream function body drops it)", () => {
  const x = Tensor.fromValues([1.5, 3], "float32");
  const like = Tensor.zeros("float8e8m0", [0]);
  assert.deepEqual(Array.from(castLike(x, like, { roundMode: "up" }).bytes()), [0x80, 0x81]);
  assert.deepEqual(Array.from(castLike(x, like, { roundMode: "down" }).bytes()), [0x7f, 0x80]);
  assert.deepEqual(Array.from(castLike(x, like, { roundMode: "nearest" }).bytes()), [0x80, 0x81]);
  assert.equal(castLike(x, dtype("float16")).dtype.name, "float16");
});

test("bad options: unknown keys, non-boolean saturate, unknown round modes", () => {
  const x = Tensor.fromValues([1], "float32");
  throwsCode(() => cast(x, "float16", { saturation: false } as never), "INVALID_ATTRIBUTE", /unknown option "saturation"; Cast and CastLike accept saturate, roundMode, opset/);
  throwsCode(() => cast(x, "float8e4m3fn", { saturate: 0 } as never), "INVALID_ATTRIBUTE", /saturate must be true or false, got 0/);
  throwsCode(() => cast(x, "float8e8m0", { roundMode: "even" } as never), "INVALID_ATTRIBUTE", /one of up, down, nearest; got "even"/);
});

test("complex cannot be cast, in either direction, at any version", () => {
  const c = Tensor.fromValues([[1, 2]], "complex64");
  throwsCode(() => cast(c, "float32"), "UNSUPPORTED_TYPE", /complex64 cannot be cast: no version of Cast accepts complex types/);
  throwsCode(() => cast(Tensor.fromValues([1], "float32"), "complex128"), "UNSUPPORTED_TYPE", /complex128 cannot be cast/);
  throwsCode(() => castLike(Tensor.fromValues([1], "float32"), c), "UNSUPPORTED_TYPE", /complex64 cannot be cast/);
});

test("unknown target types are an UNKNOWN_DTYPE error that lists the known names", () => {
  throwsCode(() => cast(Tensor.fromValues([1], "float32"), "float7"), "UNKNOWN_DTYPE", /unknown data type "float7" \(closest: float32, float16, float64, float4e2m1\); expected a name such as float32/);
  throwsCode(() => cast(Tensor.fromValues([1], "float32"), 0), "UNKNOWN_DTYPE", /unknown data type 0/);
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { throwsCode } from "../support/assertions.js";
import { dtype } from "../../src/index.js";

test("dtype() takes the fp16 / fp32 / fp64 / bf16 people type, in any case", () => {
  const cases: [string, string][] = [
    ["fp16", "float16"], ["FP16", "float16"], ["fp32", "float32"], ["Fp32", "float32"], ["fp64", "float64"], ["bf16", "bfloat16"], ["BF16", "bfloat16"],
  ];
  for (const [alias, name] of cases) assert.equal(dtype(alias).name, name, alias);
});

test("an unknown name's error lists the closest names: the float8 types for fp8", () => {
  const closest = (name: string): string => {
    try {
      dtype(name);
    } catch (e) {
      return /\(closest: ([^)]*)\)/.exec((e as Error).message)?.[1] ?? "";
    }
    assert.fail(`${name} was accepted`);
  };
  assert.equal(closest("fp8"), "float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float8e8m0");
  assert.equal(closest("FP8"), "float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float8e8m0");
  assert.equal(closest("fp4"), "float4e2m1");
  assert.equal(closest("e4m3"), "float8e4m3fn, float8e4m3fnuz");
  assert.equal(closest("flaot16"), "float16");
  assert.equal(closest("bfloat"), "bfloat16");
  assert.equal(closest("int"), "int8, int16, int32, int64, int4, int2");
  // Nothing near: no list of guesses, the message still says what is accepted.
  assert.equal(closest("nf4"), "");
  assert.equal(closest("x"), "");
  throwsCode(() => dtype("fp8"), "UNKNOWN_DTYPE", /^unknown data type "fp8" \(closest: float8e4m3fn, .*\); expected a name such as float32, /);
  throwsCode(() => dtype(99), "UNKNOWN_DTYPE", /^unknown data type 99; expected/);
});

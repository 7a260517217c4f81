/**
 * `tensorcast cast --scale`: QuantizeLinear's code for a typed-in value, with its dequantized
 * value and rounding error.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { runCli as run } from "../support/cli.js";
import type { CastReport } from "../../src/node/index.js";

async function json(...argv: string[]): Promise<CastReport> {
  const r = await run("cast", "--json", ...argv);
  assert.equal(r.code, 0, r.err);
  return JSON.parse(r.out) as CastReport;
}

test("cast --scale --zero-point shows QuantizeLinear's code, the dequantized value and the error", async () => {
  const r = await run("cast", "--to", "int8", "--scale", "0.05", "--zero-point", "3", "1.234", "-7", "nan");
  assert.equal(r.code, 0, r.err);
  const lines = r.out.trimEnd().split("\n");
  assert.match(lines[0], /^float32 -> int8 {2}\(QuantizeLinear-28, opset 28, scale 0\.05000000074505806 \(float32\), zero point 3\)$/);
  assert.match(lines[1], /^input\s+float32\s+code\s+bits\s+int8\s+dequantized\s+abs err\s+rel err\s+flag$/);
  // 1.234 / 0.05 = 24.68 -> 25, + 3 = 28 (0x1c); back: (28 - 3) * 0.05 = 1.25.
  assert.match(lines[2], /1\.234\s+1\.2339999675750732\s+0x1c\s+00011100\s+28\s+1\.25\s+0\.016\s+0\.013\s+rounded$/);
  // -7 / 0.05 + 3 = -137: clamped to -128.
  assert.match(lines[3], /-7\s+0x80\s+10000000\s+-128\s+-6\.550000190734863\s+0\.45\s+0\.0643\s+saturated$/);
  // NaN quantizes to the minimum (docs/semantics.md).
  assert.match(lines[4], /nan\s+0x80\s+10000000\s+-128\s+.*nan lost$/);
});

test("cast --scale: float8 with saturate, the scale's type, opsets and the errors", async () => {
  // float8 keeps the fraction: 3 / 2 = 1.5 (0x3c); 1000 / 2 = 500 is past 464: NaN without saturate.
  const e4 = await json("--to", "float8e4m3fn", "--scale", "2", "--no-saturate", "1000", "3");
  assert.equal(e4.operator, "QuantizeLinear-28");
  assert.deepEqual(e4.rows.map((row) => [row.code, row.quantized, row.result]), [["0x7f", "nan", "nan"], ["0x3c", "1.5", "3"]]);
  const half = await json("--from", "float16", "--to", "uint8", "--scale", "1.05859375", "--opset", "21", "9");
  // Divided in float16 (the scale's type): 8.5018... is 8.5 there, a tie: 8.
  assert.equal(half.scaleType, "float16");
  assert.equal(half.operator, "QuantizeLinear-21");
  assert.equal(half.rows[0].quantized, "8");
  const mx = await json("--to", "float4e2m1", "--scale", "4", "--scale-type", "float8e8m0", "5", "-100");
  assert.deepEqual(mx.rows.map((row) => [row.code, row.quantized, row.result, row.flag]), [["0x2", "1", "4", "rounded"], ["0xf", "-6", "-24", "saturated"]]);
  const bad = await run("cast", "--to", "int8", "--zero-point", "3", "1");
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--zero-point and --scale-type need --scale/);
  const old = await run("cast", "--to", "int4", "--scale", "1", "--opset", "19", "1");
  assert.notEqual(old.code, 0);
  assert.match(old.err, /QuantizeLinear-19 does not accept int4/);
  const zp = await run("cast", "--to", "int8", "--scale", "1", "--zero-point", "300", "1");
  assert.notEqual(zp.code, 0);
  assert.match(zp.err, /cannot store --zero-point 300 in the --to type int8/);
});

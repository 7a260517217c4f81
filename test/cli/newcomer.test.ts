/**
 * The command line as a newcomer meets it (issue 28): the type names people type, and what a
 * conversion says about itself.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { runCli as run } from "../support/cli.js";

test("--to fp16 / fp32 / bf16 are accepted; --to fp8 names the float8 types", async () => {
  for (const [name, want] of [["fp16", "float16"], ["fp32", "float32"], ["fp64", "float64"], ["bf16", "bfloat16"]]) {
    const r = await run("cast", "--json", "--to", name, "1");
    assert.equal(r.code, 0, r.err);
    assert.equal((JSON.parse(r.out) as { to: string }).to, want);
  }
  const fp8 = await run("cast", "--to", "fp8", "1");
  assert.equal(fp8.code, 1);
  assert.match(fp8.err, /^error: --to: unknown data type "fp8" \(closest: float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float8e8m0\); /);
  const convert = await run("convert", "--example", "--to", "fp8");
  assert.equal(convert.code, 2);
  assert.match(convert.err, /--to: unknown data type "fp8" \(closest: float8e4m3fn, /);
});

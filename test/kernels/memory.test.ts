/**
 * Issue 6's memory budget: a cast's peak memory is at most input + output + 2 MiB of tables (the
 * tables' size is asserted in fast.test.ts). Each case runs in a fresh Node process: it allocates
 * and touches the input (and castInto's output), casts a small tensor of the same pair until the
 * tables are built and the code compiled, reads the peak resident set (getrusage's maxRSS), casts
 * 8 Mi elements, and reads it again. The growth must be the output (none for castInto) plus at most
 * 2 MiB: a temporary of half a byte per element anywhere in the path would exceed it.
 *
 * (A cold first call grows by a few MiB more, independent of the size: V8's optimising compiler and
 * the garbage of building a table from the reference, released afterwards.)
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { scratch } from "../node/helpers.js";

const ELEMENTS = 1 << 23;
const SLACK_KIB = 2048;

const PAIRS: [string, string][] = [
  ["float32", "float16"], ["float16", "float32"], ["float32", "bfloat16"], ["bfloat16", "float32"],
  ["float32", "float8e4m3fn"], ["float8e4m3fn", "float32"], ["float64", "float16"], ["float64", "float32"],
  ["int64", "int32"], ["float32", "int8"], ["float32", "uint4"], ["float32", "float6e2m3"], ["float16", "float8e5m2"],
];

function childScript(): string {
  const index = new URL("../../src/index.js", import.meta.url).href;
  return `
    const [from, to, n, mode] = [process.argv[2], process.argv[3], Number(process.argv[4]), process.argv[5]];
    const { cast, castInto, Tensor } = await import(${JSON.stringify(index)});
    const touch = (t) => { const u8 = new Uint8Array(t.data.buffer); for (let i = 0; i < u8.length; i += 4096) u8[i] = 1; };
    const x = Tensor.zeros(from, [n]);
    touch(x);
    const out = mode === "into" ? Tensor.zeros(to, [n]) : undefined;
    if (out) touch(out);
    const small = Tensor.zeros(from, [1 << 16]);
    for (let r = 0; r < 50; r++) cast(small, to);
    const before = process.resourceUsage().maxRSS;
    const y = out ? castInto(x, out) : cast(x, to);
    const after = process.resourceUsage().maxRSS;
    console.log(JSON.stringify({ growthKiB: after - before, outputKiB: y.bytes().byteLength / 1024 }));
  `;
}

test("a warm cast's peak memory grows by its output and at most 2 MiB more; castInto's by at most 2 MiB", (t) => {
  const file = join(scratch(), "memory-child.mjs");
  writeFileSync(file, childScript());
  const rows: string[] = [];
  for (const [from, to] of PAIRS) {
    for (const mode of ["cast", "into"] as const) {
      const r = spawnSync(process.execPath, [file, from, to, String(ELEMENTS), mode], { encoding: "utf8", timeout: 60_000 });
      assert.equal(r.status, 0, r.stderr);
      const { growthKiB, outputKiB } = JSON.parse(r.stdout) as { growthKiB: number; outputKiB: number };
      const limit = (mode === "cast" ? outputKiB : 0) + SLACK_KIB;
      rows.push(`${from} -> ${to} ${mode}: +${growthKiB} KiB (output ${outputKiB} KiB, limit ${limit})`);
      assert.ok(growthKiB <= limit, `${from} -> ${to} (${mode}): peak memory grew by ${growthKiB} KiB, over ${limit} KiB`);
    }
  }
  for (const row of rows) t.diagnostic(row);
});

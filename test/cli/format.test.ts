/**
 * The CLI's text rendering (src/node/cli/format.ts) and the output points of issue 13, defect 9:
 * tables made a row at a time whose alignment one long cell cannot blow up, terminal control
 * characters shown escaped, JSON streamed exactly as JSON.stringify(value, null, 2) spells it,
 * rates under 1 KiB/s rounded, and `convert --quiet` printing nothing.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { jsonText, MAX_ALIGNED_WIDTH, renderTable, tableText, writeText } from "../../src/node/cli/format.js";
import { formatBytes } from "../../src/node/io/tensors.js";
import { exampleCheckpoint } from "../../src/node/index.js";
import { cli, scratch } from "../node/helpers.js";
import { property } from "../support/suite.js";

test("a table: columns as wide as their widest cell, two spaces apart, right-aligned where asked, no trailing spaces", () => {
  const text = renderTable([{ header: "name" }, { header: "n", align: "right" }, { header: "note" }], [["a", "1", ""], ["bbbbbb", "100", "x"]]);
  assert.equal(text, "name      n  note\na         1\nbbbbbb  100  x\n");
});

test("a cell longer than MAX_ALIGNED_WIDTH is printed whole but does not widen its column", () => {
  const long = "L".repeat(50_000);
  const lines = [...tableText([{ header: "tensor" }, { header: "dtype" }], 3, (i) => [i === 1 ? long : `t${i}`, "float32"])];
  assert.deepEqual(lines, ["tensor  dtype\n", "t0      float32\n", `${long}  float32\n`, "t2      float32\n"]);
  const wide = "W".repeat(MAX_ALIGNED_WIDTH);
  assert.equal(renderTable([{ header: "a" }, { header: "b" }], [[wide, "x"], ["y", "z"]]), `a${" ".repeat(MAX_ALIGNED_WIDTH + 1)}b\n${wide}  x\ny${" ".repeat(MAX_ALIGNED_WIDTH + 1)}z\n`);
});

test("control characters in cells are shown as \\u escapes, so a tensor name cannot drive the terminal", () => {
  assert.equal(renderTable([{ header: "tensor" }], [["a\nb"], ["\u001b[2Jx"], ["\u009b31m"], ["tab\there"]]),
    "tensor\na\\u000ab\n\\u001b[2Jx\n\\u009b31m\ntab\\u0009here\n");
});

test("tableText makes each row twice (to measure, then to print) and never holds them together", () => {
  const asked: number[] = [];
  const lines = tableText([{ header: "i" }], 3, (i) => {
    asked.push(i);
    return [String(i)];
  });
  assert.deepEqual(asked, []);
  assert.deepEqual([...lines], ["i\n", "0\n", "1\n", "2\n"]);
  assert.deepEqual(asked, [0, 1, 2, 0, 1, 2]);
});

test("jsonText is JSON.stringify(value, null, 2) and a newline, a piece at a time", () => {
  const report = {
    file: "x", size: 3, metadata: undefined, skip: () => 1,
    tensors: [
      { name: "a\n\"b\"", shape: [], stats: { min: null, max: Number.NaN, mean: -Infinity }, list: [undefined, 1] },
      { name: "c", shape: Array.from({ length: 100 }, (_, i) => i), stats: undefined, nested: { deep: { deeper: { deepest: [[1], {}] } } } },
    ],
    empty: {}, none: [],
  };
  assert.equal([...jsonText(report)].join(""), `${JSON.stringify(report, null, 2)}\n`);
  const values = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small" },
      fc.constantFrom(null, true, 0, -0, 1.5, Number.NaN, "s", "\u2028\n\"", undefined),
      fc.array(tie("value"), { maxLength: 70 }),
      fc.dictionary(fc.string({ maxLength: 4 }), tie("value"), { maxKeys: 70 }),
    ),
  })).value;
  fc.assert(fc.property(values, (v) => {
    if (v === undefined) return;
    assert.equal([...jsonText(v)].join(""), `${JSON.stringify(v, null, 2)}\n`);
  }), property(300, 9));
});

test("writeText joins small pieces into large writes", () => {
  const writes: string[] = [];
  writeText({ write: (s: string) => writes.push(s) }, (function* () {
    for (let i = 0; i < 100_000; i++) yield "abcdefghij";
  })());
  assert.equal(writes.join(""), "abcdefghij".repeat(100_000));
  assert.ok(writes.length >= 15 && writes.length <= 17, `${writes.length} writes`);
  writeText({ write: (s: string) => writes.push(s) }, "one");
  assert.equal(writes.at(-1), "one");
});

test("byte counts print exactly; rates under 1 KiB/s are rounded like the larger units", () => {
  assert.equal(formatBytes(0), "0 B");
  assert.equal(formatBytes(512), "512 B");
  assert.equal(formatBytes(1023), "1023 B");
  assert.equal(formatBytes(676.658831529867), "677 B");
  assert.equal(formatBytes(42.123), "42.1 B");
  assert.equal(formatBytes(0.5), "0.50 B");
  assert.equal(formatBytes(1536), "1.50 KiB");
  assert.equal(formatBytes(3.2 * 2 ** 30), "3.20 GiB");
});

test("convert --quiet prints nothing (and --json still prints the report)", async () => {
  const dir = scratch();
  const input = join(dir, "example.safetensors");
  writeFileSync(input, exampleCheckpoint());
  const quiet = await cli(["convert", input, "--to", "float16", "-q", "-o", join(dir, "q.safetensors")], true);
  assert.equal(quiet.code, 0, quiet.err);
  assert.equal(quiet.out, "");
  assert.equal(quiet.err, "");
  assert.ok(existsSync(join(dir, "q.safetensors")));
  const json = await cli(["convert", input, "--to", "float16", "--quiet", "--json", "-o", join(dir, "j.safetensors")]);
  assert.equal(json.code, 0, json.err);
  assert.equal((JSON.parse(json.out) as { to: string }).to, "float16");
  const loud = await cli(["convert", input, "--to", "float16", "-o", join(dir, "l.safetensors")]);
  assert.match(loud.out, /\n4 of 6 tensors converted; /);
});

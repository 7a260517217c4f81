/** The README's "Use it" examples give the results their comments say (test/support/readme-examples.ts). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { exampleLines, runReadmeExamples, spellValue } from "./support/readme-examples.js";

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

test("every README example line gives the result its comment states", () => {
  const results = runReadmeExamples(README);
  assert.equal(results.length, exampleLines(README).length);
  const checked = results.filter((r) => r.expected !== undefined);
  assert.ok(checked.length >= 13, `only ${checked.length} README lines state a result`);
  assert.deepEqual(results.filter((r) => !r.ok), []);
});

test("a README example that is wrong is caught", () => {
  const wrong = README.replace("// Uint8Array [0x3c, 0x7e, 0x7e, 0x7f]", "// Uint8Array [0x3c, 0x7e, 0x7e, 0x7e]");
  assert.notEqual(wrong, README);
  const bad = runReadmeExamples(wrong).filter((r) => !r.ok);
  assert.equal(bad.length, 1);
  assert.equal(bad[0].actual, "Uint8Array [0x3c, 0x7e, 0x7e, 0x7f]");
});

test("values are spelled as the README writes them", () => {
  assert.equal(spellValue(new Uint8Array([0xf1, 7])), "Uint8Array [0xf1, 0x07]");
  assert.equal(spellValue([1, -Infinity, NaN, "a"]), '[1, -Infinity, NaN, "a"]');
});

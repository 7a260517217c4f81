/**
 * The `tensorcast/onnx` subpath and `convertModelFile` from `tensorcast/node`: the README block
 * under "A whole ONNX model, from code" runs as a consumer's ES module (the package resolved by its
 * own name, through package.json's exports, to dist/) on the MLP test model, and each line it
 * prints equals the comment on its console.log. The subpath's exports are the precision pass's own.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { decodeModel } from "../src/io/onnx/model.js";
import { convertModelPrecision, DEFAULT_BLOCKED_OPS } from "../src/io/onnx/precision/model.js";
import { mlp } from "./io/precision/models.js";
import { playgroundScript } from "./browser/support.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const README = readFileSync(join(ROOT, "README.md"), "utf8");

/** The ```js block after the heading, and what each commented console.log must print. */
function example(): { code: string; expected: string[] } {
  const at = README.indexOf("### A whole ONNX model, from code");
  assert.ok(at >= 0, "README: no \"A whole ONNX model, from code\" section");
  const block = /```js\n([\s\S]*?)```/.exec(README.slice(at));
  assert.ok(block, "README: no ```js block in that section");
  const expected = block[1].split("\n").filter((l) => l.startsWith("console.log(")).map((l) => l.slice(l.indexOf("); // ") + 6).trim());
  return { code: block[1], expected };
}

const work = mkdtempSync(join(tmpdir(), "tensorcast-onnx-subpath-"));
after(() => rmSync(work, { recursive: true, force: true }));

test("the README's tensorcast/onnx example runs as a consumer's module and prints what its comments say", () => {
  const { code, expected } = example();
  assert.equal(expected.length, 4);
  // Inside the package folder, so that "tensorcast/onnx" resolves by the package's own name.
  const dir = join(ROOT, "build", "readme-onnx");
  mkdirSync(dir, { recursive: true });
  const script = join(dir, "example.mjs");
  writeFileSync(script, code);
  writeFileSync(join(work, "model.onnx"), mlp().bytes);
  const r = spawnSync(process.execPath, [script], { cwd: work, encoding: "utf8", timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split("\n"), expected);
  // The files it wrote are models of the types it says.
  const half = decodeModel(readFileSync(join(work, "model.fp16.onnx")));
  assert.deepEqual(half.graph.initializers.map((t) => t.tensor.dtype.name), ["float16", "float16", "float16", "float16"]);
  const int4 = decodeModel(readFileSync(join(work, "model.int4.onnx")));
  assert.deepEqual(int4.graph.initializers.map((t) => t.tensor.dtype.name), ["int4", "int4", "int4", "int4"]);
});

test("tensorcast/onnx exports the precision pass itself, and tensorcast/node exports convertModelFile", async () => {
  // The same module instance as src/ would be is not guaranteed (dist/ vs build/), so compare behaviour.
  const sub = (await import("tensorcast/onnx")) as typeof import("../src/onnx/index.js");
  assert.deepEqual(Object.keys(sub).sort(), ["DEFAULT_BLOCKED_OPS", "QUANTIZE_MODES", "convertModelPrecision", "quantizeModel"]);
  assert.deepEqual(sub.DEFAULT_BLOCKED_OPS, DEFAULT_BLOCKED_OPS);
  const bytes = mlp().bytes;
  assert.deepEqual(sub.convertModelPrecision(bytes, { to: "float8e5m2" }).bytes, convertModelPrecision(bytes, { to: "float8e5m2" }).bytes);
  const node = (await import("tensorcast/node")) as typeof import("../src/node/index.js");
  assert.equal(typeof node.convertModelFile, "function");
  const core = (await import("tensorcast")) as Record<string, unknown>;
  assert.equal(core.convertModelPrecision, undefined, "the precision pass is not in the core entry (its gzip budget)");
});

test("tensorcast/onnx bundles for the browser (no Node built-in) and converts there as in Node", async (t) => {
  const script = await playgroundScript();
  const bundle = await script.bundleCore({ entry: join(ROOT, "dist", "onnx", "index.js") });
  t.diagnostic(`tensorcast/onnx alone: ${bundle.bytes} bytes minified, ${bundle.gzipBytes} gzipped`);
  const dir = join(ROOT, "build", "readme-onnx");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "onnx.bundle.mjs");
  writeFileSync(file, bundle.code);
  const lib = (await import(pathToFileURL(file).href)) as typeof import("../src/onnx/index.js");
  const bytes = mlp().bytes;
  assert.deepEqual(lib.convertModelPrecision(bytes, { to: "float16" }).bytes, convertModelPrecision(bytes, { to: "float16" }).bytes);
});

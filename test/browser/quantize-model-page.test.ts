// suite: full
/**
 * quantizeModel (tensorcast/onnx) inside Chromium, Firefox and WebKit: the subpath bundled for the
 * browser (esbuild refuses any Node built-in), the golden fixture models quantized in the page in
 * every mode and option the Node tests check against onnxruntime, and each output's SHA-256 equal
 * to the same call's in Node: the variants a page makes are byte for byte the ones the CLI writes.
 * An engine that is not installed is skipped with the reason, except under CI, where it fails.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { copyFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { quantizeModel, type QuantizeOptions } from "../../src/onnx/index.js";
import { ENGINE_LABEL, ENGINES, engineMissing, launch, RECORD_PAGE_ERRORS } from "./engines.js";
import { OUTPUT, ROOT, playgroundScript } from "./support.js";

/** The page as the in-page function uses it (the tests have no DOM types). */
type G = any;

const FIXTURES = join(ROOT, "test", "fixtures", "quantize");
const CASES: readonly { model: string; opts: QuantizeOptions }[] = [
  ...(["fp16", "q8", "int8", "uint8", "q4", "q4f16", "bnb4"] as const).map((mode) => ({ model: "model.onnx", opts: { mode } })),
  { model: "model.onnx", opts: { mode: "int8", perChannel: true } },
  { model: "model.onnx", opts: { mode: "q4", blockSize: 16, symmetric: false } },
  { model: "model.onnx", opts: { mode: "bnb4", quantType: "fp4" } },
  { model: "conv.onnx", opts: { mode: "q8" } },
  { model: "conv.onnx", opts: { mode: "fp16" } },
];

let prepared: Promise<{ dir: string; want: string[] }> | undefined;

/** The page, the bundle, the models and Node's digests, made once for the three engines. */
function prepare(): Promise<{ dir: string; want: string[] }> {
  prepared ??= (async () => {
    const dir = join(OUTPUT, "quantize-model-page");
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const script = await playgroundScript();
    const { code } = await script.bundleCore({ entry: join(ROOT, "build", "src", "onnx", "index.js"), minify: false });
    await writeFile(join(dir, "tensorcast-onnx.js"), code);
    const want: string[] = [];
    for (const model of new Set(CASES.map((c) => c.model))) await copyFile(join(FIXTURES, model), join(dir, model));
    for (const c of CASES) {
      const bytes = new Uint8Array(await readFile(join(dir, c.model)));
      want.push(createHash("sha256").update(quantizeModel(bytes, c.opts).bytes).digest("hex"));
    }
    await writeFile(join(dir, "index.html"), `<!doctype html><meta charset="utf-8"><title>quantizeModel</title>\n<script>${RECORD_PAGE_ERRORS}</script>\n<body></body>\n`);
    return { dir, want };
  })();
  return prepared;
}

for (const engine of ENGINES) {
  test(`${ENGINE_LABEL[engine]}: quantizeModel in a page writes the bytes Node writes (${CASES.length} mode / option cases)`, { timeout: 300_000 }, async (t) => {
    const missing = engineMissing(engine);
    if (missing) {
      t.skip(missing);
      return;
    }
    const { dir, want } = await prepare();
    const script = await playgroundScript();
    const { server, url } = await script.servePlayground({ dir, port: 0, isolated: false });
    const page = await launch(engine);
    try {
      await page.goto(url);
      const got = await page.evaluate(async (cases: readonly { model: string; opts: QuantizeOptions }[]) => {
        const g = globalThis as G;
        const tc = await import(new URL("./tensorcast-onnx.js", g.location.href).href);
        const hex = (b: ArrayBuffer) => Array.from(new Uint8Array(b), (v) => v.toString(16).padStart(2, "0")).join("");
        const out: string[] = [];
        for (const c of cases) {
          const bytes = new Uint8Array(await (await g.fetch(`./${c.model}`)).arrayBuffer());
          out.push(hex(await g.crypto.subtle.digest("SHA-256", tc.quantizeModel(bytes, c.opts).bytes)));
        }
        return out;
      }, CASES);
      assert.deepEqual(await page.errors(), []);
      CASES.forEach((c, i) => assert.equal(got[i], want[i], `${c.model} ${JSON.stringify(c.opts)}: the page's output differs from Node's`));
      t.diagnostic(`${page.version}: ${CASES.length} variants equal Node's`);
    } finally {
      await page.close();
      server.close();
    }
  });
}

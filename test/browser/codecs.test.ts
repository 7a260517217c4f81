// suite: full
/**
 * The exhaustive codec and kernel tests (bundleCodecChecks: CODEC_TEST_FILES with a node:test
 * stand-in) and the cast digest, run inside each browser engine (Chromium, Firefox, WebKit; see
 * engines.ts) from a page served over http, and compared with the very same bundle run in Node: every
 * test passes in the engine, none is skipped for a missing platform feature, and every conversion's
 * output hashes the same as Node's.
 *
 * An engine that is not installed is skipped with the reason, except under CI, where it fails.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { ENGINE_LABEL, ENGINES, engineMissing, launch, RECORD_PAGE_ERRORS } from "./engines.js";
import { bundleCodecChecks, OUTPUT, playgroundScript, type CodecChecks } from "./support.js";

/**
 * Node's result for the same bundle, computed on a worker thread: the checks are mostly synchronous
 * and would otherwise stall this thread's event loop, and with it the conversation with the browser.
 */
function inNodeWorker(file: string): Promise<CodecChecks> {
  const worker = new Worker(
    `import(${JSON.stringify(pathToFileURL(file).href)}).then((m) => m.runCodecChecks())` +
    `.then((r) => require("node:worker_threads").parentPort.postMessage(r));`,
    { eval: true });
  return new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`the Node codec checks' worker exited (${code}) without a result`)));
  });
}

/** The page, the bundle and Node's result (started at once, shared by the three engines). */
let prepared: Promise<{ dir: string; inNode: Promise<CodecChecks> }> | undefined;

function prepare(): Promise<{ dir: string; inNode: Promise<CodecChecks> }> {
  prepared ??= (async () => {
    const { code } = await bundleCodecChecks();
    const dir = join(OUTPUT, "codec-page");
    await mkdir(dir, { recursive: true });
    // The file both the page and Node load. .js: the page server gives .mjs no JavaScript MIME type,
    // and a module script needs one (test-output/ is inside this "type": "module" package).
    const file = join(dir, "codec-checks.js");
    await writeFile(file, code);
    await writeFile(join(dir, "index.html"),
      `<!doctype html><meta charset="utf-8"><title>codec checks</title>\n<script>${RECORD_PAGE_ERRORS}</script>\n` +
      `<script type="module">import "./codec-checks.js"; document.body.dataset.ready = "true";</script>\n<body></body>\n`);
    const inNode = inNodeWorker(file);
    // Awaited by each engine's test; a rejection before the first await must not go unhandled.
    inNode.catch(() => undefined);
    return { dir, inNode };
  })();
  return prepared;
}

for (const engine of ENGINES) {
  test(`the exhaustive codec tests run inside ${ENGINE_LABEL[engine]} and agree with Node bit for bit`, { timeout: 900_000 }, async (t) => {
    const missing = engineMissing(engine);
    if (missing) {
      t.skip(missing);
      return;
    }
    const { dir, inNode: nodeChecks } = await prepare();
    const script = await playgroundScript();
    const { server, url } = await script.servePlayground({ dir, port: 0, isolated: false });
    const start = Date.now();
    const page = await launch(engine);
    try {
      t.diagnostic(`${page.version}, started in ${Date.now() - start} ms`);
      await page.goto(url);
      await page.waitFor(() => (globalThis as { document?: { body?: { dataset: { ready?: string } } } }).document?.body?.dataset.ready === "true");
      const inBrowser = page.evaluate(() => (globalThis as unknown as { runCodecChecks(): Promise<unknown> }).runCodecChecks()) as Promise<CodecChecks>;
      const [browser, inNode] = await Promise.all([inBrowser, nodeChecks]);
      for (const [where, r] of [[ENGINE_LABEL[engine], browser], ["Node", inNode]] as const) {
        t.diagnostic(`${where}: ${r.tests.passed}/${r.tests.tests} codec tests passed, ${r.tests.skipped.length} skipped, in ${r.tests.ms} ms; ` +
          `${r.digest.conversions} conversions, ${r.digest.elements} elements hashed in ${r.digest.ms} ms`);
        assert.equal(r.tests.failed, 0, `${where}: first failure: ${JSON.stringify(r.tests.failures[0])}`);
      }
      // Every engine here has every platform feature the codec tests look for (Float16Array):
      // nothing may be skipped but the opt-in 2^32 sweep.
      // The codec page is not cross-origin isolated: the shared-arena test has no shared memory there.
      assert.deepEqual(browser.tests.skipped.filter((s) => !s.reason.includes("TENSORCAST_EXHAUSTIVE") && !s.reason.includes("cross-origin isolation")), []);
      assert.equal(browser.tests.passed + browser.tests.skipped.length, browser.tests.tests);
      assert.deepEqual(browser.tests.names, inNode.tests.names);
      assert.ok(browser.tests.tests >= 80, `only ${browser.tests.tests} codec tests ran`);
      assert.ok(browser.tests.names.includes("every float16 code to float8e8m0 (6 settings)"));
      const differing = Object.keys(inNode.digest.hashes).filter((k) => browser.digest.hashes[k] !== inNode.digest.hashes[k]);
      assert.deepEqual(differing, [], `${ENGINE_LABEL[engine]}'s cast output differs from Node's, first at ${differing[0]}`);
      assert.equal(browser.digest.conversions, inNode.digest.conversions);
      assert.deepEqual(await page.errors(), []);
    } finally {
      await page.close();
      server.close();
    }
    t.diagnostic(`${ENGINE_LABEL[engine]}: ${Date.now() - start} ms in all`);
  });
}

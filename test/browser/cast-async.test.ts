/**
 * tensorcast/web's castAsync in a real browser (Debian's Chromium, driven by playwright-core): the
 * compiled modules under build/ are served as they are (ES modules, the worker beside them), once
 * cross-origin isolated, once not. Isolated, every numeric pair split over Web Workers gives cast's
 * bytes; not isolated, the same with every range copied to a worker and back, the page's event loop
 * turning meanwhile; a
 * worker script that does not load is a WORKER_FAILED rejection, and the next call works again.
 * Then the way a bundled app ships it: esbuild bundles the app with tensorcast/web, and the worker
 * as a second entry beside it.
 *
 * Skips (with the reason) where /usr/bin/chromium is missing, except under CI, where it fails.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as esbuild from "esbuild";
import { chromium, type Browser, type Page } from "playwright-core";
import { chromiumMissing, launchOptions, OUTPUT, playgroundScript, ROOT } from "./support.js";
import type { PageReport } from "./pages/cast-async-page.js";

type PageModule = typeof import("./pages/cast-async-page.js");

const PAGE = "test/browser/pages/cast-async.html";

/** Serves build/ (isolated or not), opens the checks page, runs `body`, then asserts the page logged no error. */
async function inPage(browser: Browser, isolated: boolean, body: (page: Page, checks: <R>(run: (m: PageModule) => Promise<R>) => Promise<R>) => Promise<void>): Promise<void> {
  const { page, problems, close } = await openPage(browser, isolated);
  try {
    // `run` is serialised into the page, where the checks module is globalThis.checks.
    const checks = <R>(run: (m: PageModule) => Promise<R>): Promise<R> =>
      page.evaluate(`(${run.toString()})(globalThis.checks)`) as Promise<R>;
    await body(page, checks);
    assert.deepEqual(problems, []);
  } finally {
    await close();
  }
}

/** The page's workers are castAsync's, at least two of them. */
function assertCastWorkers(page: Page): void {
  const workers = page.workers().map((w) => w.url());
  assert.ok(workers.length >= 2 && workers.every((u) => u.endsWith("/src/web/cast-worker.js")), `workers: ${workers.join(", ")}`);
}

async function openPage(browser: Browser, isolated: boolean): Promise<{ page: Page; close(): Promise<void>; problems: string[] }> {
  const script = await playgroundScript();
  const dir = join(ROOT, "build");
  await writeFile(join(dir, PAGE),
    `<!doctype html><meta charset="utf-8"><title>castAsync</title>\n` +
    `<script type="module">import * as m from "./cast-async-page.js"; globalThis.checks = m; document.body.dataset.ready = "true";</script>\n<body></body>\n`);
  const { server, url } = await script.servePlayground({ dir, port: 0, isolated });
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  await page.goto(new URL(PAGE, url).href);
  await page.waitForSelector("body[data-ready=true]", { state: "attached" });
  return { page, problems, close: async () => { await page.close(); server.close(); } };
}

function assertClean(r: PageReport, what: string): void {
  assert.deepEqual(r.failures.slice(0, 20), [], `${what}: ${r.failures.length} failures`);
}

test("castAsync on Web Workers in Chromium", { timeout: 600_000 }, async (t) => {
  const missing = chromiumMissing();
  if (missing) {
    t.skip(missing);
    return;
  }
  const browser = await chromium.launch(launchOptions());
  try {
    await t.test("cross-origin isolated: every numeric pair split over Web Workers gives cast's bytes", () => inPage(browser, true, async (page, checks) => {
      const r = await checks((m) => m.runCastAsyncChecks());
      t.diagnostic(`isolated: ${r.compared} calls compared, ${r.split} split over workers, hardwareConcurrency ${r.hardwareConcurrency}`);
      assert.equal(r.isolated, true, "the page is not cross-origin isolated");
      assertClean(r, "isolated");
      assert.ok(r.compared > 800, `only ${r.compared} calls compared`);
      // Every cast between two types went to the workers (the page checks each call).
      assert.ok(r.split >= 1000, `only ${r.split} of ${r.compared} calls split`);
      assertCastWorkers(page);
    }));

    await t.test("not isolated: no shared memory, so ranges are copied to the workers and back; the page stays responsive", () => inPage(browser, false, async (page, checks) => {
      const r = await checks((m) => m.runWithoutIsolation());
      t.diagnostic(`not isolated: ${r.compared} calls compared; ${r.ticks} timer ticks during a 4 Mi-element castAsync`);
      assert.equal(r.isolated, false);
      assertClean(r, "not isolated");
      assert.ok(r.compared > 600, `only ${r.compared} calls compared`);
      assert.equal(r.split, 0, "a result on shared memory in a page without it");
      assert.match(r.sharedZerosError, /^UNSUPPORTED_PLATFORM: SharedArrayBuffer is not available here: a browser page needs cross-origin isolation/);
      assert.ok(r.ticks >= 3, `the page's event loop turned only ${r.ticks} times during castAsync`);
      assertCastWorkers(page);
    }));

    await t.test("cross-origin isolated, callerConverts false: the page converts nothing and stays responsive", () => inPage(browser, true, async (_page, checks) => {
      const r = await checks((m) => m.runCallerIdle());
      t.diagnostic(`callerConverts false: ${r.ticks} timer ticks during a 4 Mi-element castAsync`);
      assertClean(r, "callerConverts false");
      assert.ok(r.ticks >= 3, `the page's event loop turned only ${r.ticks} times during castAsync`);
    }));

    await t.test("a worker script that does not load: WORKER_FAILED naming it; the next call starts a working pool", () => inPage(browser, true, async (_page, checks) => {
      const r = await checks((m) => m.runWorkerFailure("./no-such-worker.js"));
      assert.match(r.error, /^WORKER_FAILED: a castAsync Web Worker \(\.\/no-such-worker\.js\) failed/);
      assert.match(r.error, /setCastWorkerUrl/);
      assertClean(r.after, "after the failure");
      assert.equal(r.after.split, 2);
    }));
  } finally {
    await browser.close();
  }
});

test("tensorcast/web bundled by esbuild, the worker emitted as its own entry beside the app: castAsync splits in Chromium", { timeout: 300_000 }, async (t) => {
  const missing = chromiumMissing();
  if (missing) {
    t.skip(missing);
    return;
  }
  const script = await playgroundScript();
  const dir = join(OUTPUT, "web-bundle");
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const app = join(dir, "app-entry.js");
  await writeFile(app, [
    `import { cast, Tensor } from ${JSON.stringify(join(ROOT, "dist", "index.js"))};`,
    `import { castAsync } from ${JSON.stringify(join(ROOT, "dist", "web", "index.js"))};`,
    "const n = (1 << 20) + 5;",
    "const x = Tensor.zeros('float32', [n]);",
    "for (let i = 0; i < n; i++) x.data[i] = (i % 4099) * 0.37 - 700;",
    "const y = await castAsync(x, 'float8e5m2', { threads: 2 });",
    "const want = cast(x, 'float8e5m2').bytes();",
    "const got = y.bytes();",
    "let same = got.length === want.length;",
    "for (let i = 0; same && i < want.length; i++) same = got[i] === want[i];",
    "globalThis.result = { same, shared: y.data.buffer instanceof SharedArrayBuffer };",
  ].join("\n"));
  await esbuild.build({
    entryPoints: { app, "cast-worker": join(ROOT, "dist", "web", "cast-worker.js") },
    outdir: dir, bundle: true, format: "esm", platform: "browser", target: "es2022", minify: true, logLevel: "silent",
    plugins: [script.noNodeBuiltins],
  });
  await writeFile(join(dir, "index.html"), `<!doctype html><meta charset="utf-8"><script type="module" src="./app.js"></script>\n`);
  const { server, url } = await script.servePlayground({ dir, port: 0 });
  const browser = await chromium.launch(launchOptions());
  try {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    await page.goto(url);
    await page.waitForFunction(() => (globalThis as { result?: unknown }).result !== undefined || false, undefined, { timeout: 60_000 });
    const result = await page.evaluate(() => (globalThis as unknown as { result: { same: boolean; shared: boolean } }).result);
    assert.deepEqual(result, { same: true, shared: true });
    assert.deepEqual(page.workers().map((w) => new URL(w.url()).pathname), ["/cast-worker.js"]);
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    server.close();
  }
});

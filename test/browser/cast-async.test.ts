// suite: full
/**
 * tensorcast/web's castAsync in real browsers: Chromium, Firefox and WebKit (engines.ts), each
 * running the same checks. The compiled modules under build/ are served as they are (ES modules, the
 * worker beside them), once cross-origin isolated, once not. Isolated, every numeric pair split over
 * Web Workers gives cast's bytes; not isolated, the same with every range copied to a worker and
 * back, the page's event loop turning meanwhile; a worker script that does not load is a
 * WORKER_FAILED rejection, and the next call works again. Isolated, the quantize helper thread
 * (useQuantizeThread) runs chunks on a Web Worker with the one-thread bytes (not isolated, it never
 * starts). Isolated, castIntoAsync between tensors of a shared arena runs the kernels in place on
 * the arena's memory in every worker: the page's worker recorder (engines.ts) shows one resident request per worker per call, the memory sent to
 * each once, and each worker's answer (a probe around the real worker) says it converted in place,
 * so a silent fallback to copies fails even though its bytes are right; not isolated, a shared
 * arena is refused. Then the way a bundled app ships it:
 * esbuild bundles the app with tensorcast/web, and the worker as a second entry beside it.
 * WebKitGTK has no SharedArrayBuffer at all: see SHARED_MEMORY_SWITCH for how it is checked.
 *
 * An engine that is not installed is skipped with the reason, except under CI, where it fails.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as esbuild from "esbuild";
import { ENGINE_LABEL, ENGINES, engineMissing, launch, RECORDERS, type EngineName, type EnginePage, type RecordedWorker } from "./engines.js";
import { OUTPUT, playgroundScript, ROOT } from "./support.js";
import type { PageReport } from "./pages/cast-async-page.js";

type PageModule = typeof import("./pages/cast-async-page.js");

const PAGE = "test/browser/pages/cast-async.html";

/** Serves build/ (isolated or not), opens the checks page, runs `body`, then asserts the page logged no error. */
async function inPage(page: EnginePage, isolated: boolean, body: (checks: <R>(run: (m: PageModule) => Promise<R>) => Promise<R>) => Promise<void>): Promise<void> {
  const script = await playgroundScript();
  const { server, url } = await script.servePlayground({ dir: join(ROOT, "build"), port: 0, isolated });
  try {
    await page.goto(new URL(PAGE, url).href);
    await page.waitFor(() => (globalThis as { checks?: unknown }).checks !== undefined);
    // `run` is serialised into the page, where the checks module is globalThis.checks.
    await body((run) => page.evaluate(`(${run.toString()})(globalThis.checks)`));
    assert.deepEqual(await page.errors(), []);
  } finally {
    server.close();
  }
}

async function writeChecksPage(): Promise<void> {
  await writeFile(join(ROOT, "build", PAGE),
    `<!doctype html><meta charset="utf-8"><title>castAsync</title>\n${RECORDERS}` +
    `<script type="module">import * as m from "./cast-async-page.js"; globalThis.checks = m;</script>\n<body></body>\n`);
}

/** The page's workers are castAsync's, at least two of them, and each sent results back. */
async function assertCastWorkers(page: EnginePage): Promise<void> {
  const workers = await page.evaluate<RecordedWorker[]>("globalThis.castWorkers");
  assert.ok(workers.length >= 2 && workers.every((w) => w.url.endsWith("/src/web/cast-worker.js") && w.messages > 0),
    `workers: ${JSON.stringify(workers)}`);
}

function assertClean(r: PageReport, what: string): void {
  assert.deepEqual(r.failures.slice(0, 20), [], `${what}: ${r.failures.length} failures`);
}

/**
 * Engines whose pages never have SharedArrayBuffer, not even cross-origin isolated, and the switch
 * that turns it on for the checks that need shared memory.
 *
 * WebKitGTK 2.50 (Debian's) leaves the SharedArrayBuffer constructor off in every page: a page served
 * with COOP and COEP is crossOriginIsolated, yet `typeof SharedArrayBuffer` is "undefined" (shared
 * WebAssembly memory still is one). The GLib ports do not yet turn it on for isolated pages' web
 * processes as Safari does (https://bugs.webkit.org/show_bug.cgi?id=317847, open). So the checks on
 * shared memory run in a second WebKit launched with JavaScriptCore's own switch, which exposes it
 * to every page (so the checks without isolation keep the plain browser); and the plain browser's
 * isolated page is checked for what its users get: castAsync copies ranges, as without isolation.
 */
const SHARED_MEMORY_SWITCH: Partial<Record<EngineName, { readonly why: string; readonly env: Readonly<Record<string, string>> }>> = {
  webkit: {
    why: "WebKitGTK exposes no SharedArrayBuffer even to cross-origin isolated pages (WebKit bug 317847): " +
      "the shared-memory checks run with JSC_useSharedArrayBuffer=1, as Safari has it in isolated pages",
    env: { JSC_useSharedArrayBuffer: "1" },
  },
};

for (const engine of ENGINES) {
  const name = ENGINE_LABEL[engine];
  test(`castAsync on Web Workers in ${name}`, { timeout: 600_000 }, async (t) => {
    const missing = engineMissing(engine);
    if (missing) {
      t.skip(missing);
      return;
    }
    await writeChecksPage();
    const quirk = SHARED_MEMORY_SWITCH[engine];
    const page = await launch(engine);
    let shared: EnginePage | undefined;
    try {
      t.diagnostic(page.version);
      if (quirk) t.diagnostic(`${name}: ${quirk.why}`);
      shared = quirk ? await launch(engine, { env: quirk.env }) : page;
      const sharedPage = shared;
      const switched = switchedLabel(engine);

      await t.test(`cross-origin isolated: every numeric pair split over Web Workers gives cast's bytes${switched}`, () => inPage(sharedPage, true, async (checks) => {
        const r = await checks((m) => m.runCastAsyncChecks());
        t.diagnostic(`${name} isolated: ${r.compared} calls compared, ${r.split} split over workers, hardwareConcurrency ${r.hardwareConcurrency}`);
        assert.equal(r.isolated, true, "the page is not cross-origin isolated");
        assertClean(r, "isolated");
        assert.ok(r.compared > 800, `only ${r.compared} calls compared`);
        // Every cast between two types went to the workers (the page checks each call).
        assert.ok(r.split >= 1000, `only ${r.split} of ${r.compared} calls split`);
        await assertCastWorkers(sharedPage);
      }));

      await t.test(`cross-origin isolated: casts within a shared arena run in place on 2 Web Workers, each sent an arena's memory only when it changes; reset() refused${switched}`, () => inPage(sharedPage, true, async (checks) => {
        const r = await checks((m) => m.runSharedArenaChecks());
        t.diagnostic(`${name} shared arena: ${r.calls} castIntoAsync calls, resident requests per worker ${JSON.stringify(r.residentPerWorker)}, memories sent ${JSON.stringify(r.memoriesPerWorker)}, workers answered ${JSON.stringify(r.probes)}`);
        assertClean(r, "shared arena");
        assert.equal(r.calls, 28);
        // 8 resident pairs, 2 calls each, then one in a second arena and one back in the first: one
        // resident request per worker per call, and no ranges of data (the page checks each call);
        // each arena's memory went to each worker only when it was not the one sent last.
        assert.equal(r.workers, 2);
        assert.deepEqual(r.residentPerWorker, [18, 18]);
        assert.deepEqual(r.memoriesPerWorker, [3, 3]);
        // Each worker's kernels ran on the arena's memory itself: none streamed copies through its own.
        assert.equal(r.probes.copied, undefined, JSON.stringify(r.probes));
        assert.ok((r.probes["in place"] ?? 0) >= 16, JSON.stringify(r.probes));
        assert.match(r.resetError, /^ARENA_SHARED: reset\(\) of a shared arena is refused: views of shared memory cannot be detached/);
      }));

      await t.test("not isolated: no shared memory, so ranges are copied to the workers and back; the page stays responsive", () => inPage(page, false, async (checks) => {
        const r = await checks((m) => m.runWithoutIsolation());
        t.diagnostic(`${name} not isolated: ${r.compared} calls compared; ${r.ticks} timer ticks during a 4 Mi-element castAsync`);
        assert.equal(r.isolated, false);
        assertCopied(r);
        assert.match(r.sharedZerosError, /^UNSUPPORTED_PLATFORM: SharedArrayBuffer is not available here: a browser page needs cross-origin isolation/);
        assert.match(await checks(async (m) => m.sharedArenaError()), NO_SHARED_ARENA);
        await assertCastWorkers(page);
      }));

      if (quirk) {
        await t.test(`cross-origin isolated without SharedArrayBuffer (${name} as installed): ranges are copied, as without isolation`, () => inPage(page, true, async (checks) => {
          assert.equal(await page.evaluate("typeof SharedArrayBuffer"), "undefined", `${name} now has SharedArrayBuffer in isolated pages: drop its SHARED_MEMORY_SWITCH`);
          const r = await checks((m) => m.runWithoutIsolation());
          t.diagnostic(`${name} isolated, no SharedArrayBuffer: ${r.compared} calls compared; ${r.ticks} timer ticks during a 4 Mi-element castAsync`);
          assert.equal(r.isolated, true);
          assertCopied(r);
          assert.match(r.sharedZerosError, /^UNSUPPORTED_PLATFORM: SharedArrayBuffer is not available here/);
          assert.match(await checks(async (m) => m.sharedArenaError()), NO_SHARED_ARENA);
          await assertCastWorkers(page);
        }));
      }

      await t.test(`cross-origin isolated, callerConverts false: the page converts nothing and stays responsive${switched}`, () => inPage(sharedPage, true, async (checks) => {
        const r = await checks((m) => m.runCallerIdle());
        t.diagnostic(`${name} callerConverts false: ${r.ticks} timer ticks during a 4 Mi-element castAsync`);
        assertClean(r, "callerConverts false");
        assert.ok(r.ticks >= 3, `the page's event loop turned only ${r.ticks} times during castAsync`);
      }));

      await t.test(`cross-origin isolated: the quantize helper thread (a Web Worker) runs chunks, with the one-thread bytes${switched}`, () => inPage(sharedPage, true, async (checks) => {
        const r = await checks((m) => m.runQuantThreadChecks());
        t.diagnostic(`${name} quantize helper: ${r.chunks} chunks on the Web Worker over ${r.rounds} rounds`);
        assert.deepEqual(r.failures, []);
        assert.equal(r.isolated, true);
        assert.ok(r.chunks > 0, "the helper Web Worker ran no chunk");
      }));

      await t.test("not isolated: no shared memory, so the quantize helper thread never starts and every call runs on the page, with the same bytes", () => inPage(page, false, async (checks) => {
        const r = await checks((m) => m.runQuantThreadChecks());
        assert.deepEqual(r.failures, []);
        assert.equal(r.isolated, false);
        assert.equal(r.chunks, 0);
      }));

      await t.test(`a worker script that does not load: WORKER_FAILED naming it; the next call starts a working pool${switched}`, () => inPage(sharedPage, true, async (checks) => {
        const r = await checks((m) => m.runWorkerFailure("./no-such-worker.js"));
        assert.match(r.error, /^WORKER_FAILED: a castAsync Web Worker \(\.\/no-such-worker\.js\) failed/);
        assert.match(r.error, /setCastWorkerUrl/);
        assertClean(r.after, "after the failure");
        assert.equal(r.after.split, 2);
      }));
    } finally {
      if (shared && shared !== page) await shared.close();
      await page.close();
    }
  });
}

/** How a test name says it ran with the engine's shared-memory switch ("" without one). */
function switchedLabel(engine: EngineName): string {
  const quirk = SHARED_MEMORY_SWITCH[engine];
  return quirk ? ` (${Object.entries(quirk.env).map(([k, v]) => `${k}=${v}`).join(" ")})` : "";
}

/** createArena(…, { shared: true }) in a page without SharedArrayBuffer, as Node says it without one. */
const NO_SHARED_ARENA = new RegExp("^UNSUPPORTED_PLATFORM: a shared arena needs shared WebAssembly memory and SharedArrayBuffer, which this runtime refused " +
  "\\(SharedArrayBuffer is not defined\\)\\. A browser page needs cross-origin isolation \\(the headers Cross-Origin-Opener-Policy: same-origin " +
  "and Cross-Origin-Embedder-Policy: require-corp\\)");

/** runWithoutIsolation's report: cast's bytes, nothing on shared memory, the page's event loop turning meanwhile. */
function assertCopied(r: PageReport & { ticks: number }): void {
  assertClean(r, r.isolated ? "isolated without SharedArrayBuffer" : "not isolated");
  assert.ok(r.compared > 600, `only ${r.compared} calls compared`);
  assert.equal(r.split, 0, "a result on shared memory in a page without it");
  assert.ok(r.ticks >= 3, `the page's event loop turned only ${r.ticks} times during castAsync`);
}

/** The app bundled with tensorcast/web, the worker as its own entry; built once for every engine. */
let bundledApp: Promise<string> | undefined;

function buildBundledApp(): Promise<string> {
  bundledApp ??= (async () => {
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
      "globalThis.result = { same, shared: typeof SharedArrayBuffer === 'function' && y.data.buffer instanceof SharedArrayBuffer };",
    ].join("\n"));
    await esbuild.build({
      entryPoints: { app, "cast-worker": join(ROOT, "dist", "web", "cast-worker.js") },
      outdir: dir, bundle: true, format: "esm", platform: "browser", target: "es2022", minify: true, logLevel: "silent",
      plugins: [script.noNodeBuiltins],
    });
    await writeFile(join(dir, "index.html"), `<!doctype html><meta charset="utf-8">${RECORDERS}<script type="module" src="./app.js"></script>\n`);
    return dir;
  })();
  return bundledApp;
}

for (const engine of ENGINES) {
  const name = ENGINE_LABEL[engine];
  test(`tensorcast/web bundled by esbuild, the worker emitted as its own entry beside the app: castAsync splits in ${name}${switchedLabel(engine)}`, { timeout: 300_000 }, async (t) => {
    const missing = engineMissing(engine);
    if (missing) {
      t.skip(missing);
      return;
    }
    const dir = await buildBundledApp();
    const script = await playgroundScript();
    const { server, url } = await script.servePlayground({ dir, port: 0 });
    const quirk = SHARED_MEMORY_SWITCH[engine];
    if (quirk) t.diagnostic(`${name}: ${quirk.why}`);
    const page = await launch(engine, { env: quirk?.env });
    try {
      await page.goto(url);
      await page.waitFor(() => (globalThis as { result?: unknown }).result !== undefined);
      assert.deepEqual(await page.evaluate("globalThis.result"), { same: true, shared: true });
      const workers = await page.evaluate<RecordedWorker[]>("globalThis.castWorkers");
      assert.deepEqual(workers.map((w) => new URL(w.url).pathname), ["/cast-worker.js"]);
      assert.ok(workers[0].messages > 0, "the worker sent nothing back");
      assert.deepEqual(await page.errors(), []);
    } finally {
      await page.close();
      server.close();
    }
  });
}

/**
 * bench/native-f16.ts in a browser engine: Chromium, Firefox or WebKit (JavaScriptCore, Safari's
 * engine), so each engine's native float16 paths are measured where they would run.
 *
 *   npx tsc -p tsconfig.test.json && node build/bench/browser-native.js [--engine firefox] [--n 4194304] [--reps 9]
 *
 * The benchmark module is bundled with esbuild, served by the playground's static server and run
 * as the page's module; its console lines are collected and printed here. Without --engine every
 * engine this machine has runs, one after another.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as esbuild from "esbuild";
import { engineMissing, launch, type EngineName } from "../test/browser/engines.js";
import { playgroundScript, ROOT } from "../test/browser/support.js";

const ENGINES: readonly EngineName[] = ["chromium", "firefox", "webkit"];

const argv = process.argv.slice(2);
const at = argv.indexOf("--engine");
const engines = at >= 0 ? [argv[at + 1] as EngineName] : ENGINES;
const benchArgs = at >= 0 ? [...argv.slice(0, at), ...argv.slice(at + 2)] : argv;
for (const e of engines) if (!ENGINES.includes(e)) throw new Error(`--engine ${e}: expected one of ${ENGINES.join(", ")}`);

const dir = await mkdtemp(join(tmpdir(), "tensorcast-native-bench-"));
try {
  await esbuild.build({
    entryPoints: [join(ROOT, "build", "bench", "native-f16.js")], bundle: true, format: "esm", platform: "browser",
    outfile: join(dir, "bench.js"), logLevel: "warning",
  });
  // Console lines are kept for this process; the module's last line marks the end.
  await writeFile(join(dir, "index.html"),
    `<!doctype html><meta charset="utf-8"><title>native float16</title><script>
globalThis.benchArgs = ${JSON.stringify(benchArgs)}; globalThis.benchOut = [];
console.log = (...a) => globalThis.benchOut.push(a.join(" "));
</script><script type="module">import "./bench.js"; globalThis.benchDone = true;</script>
<script type="module">window.addEventListener("error", (e) => { globalThis.benchOut.push("error: " + e.message); globalThis.benchDone = true; });</script>\n`);
  const script = await playgroundScript();
  const { server, url } = await script.servePlayground({ dir, port: 0, isolated: true });
  try {
    for (const engine of engines) {
      const missing = engineMissing(engine);
      if (missing) {
        console.log(`${engine}: skipped (${missing})`);
        continue;
      }
      const page = await launch(engine);
      try {
        await page.goto(url);
        await page.waitFor(() => (globalThis as { benchDone?: boolean }).benchDone === true, undefined, 1_800_000);
        console.log(`\n== ${engine}: ${page.version}`);
        for (const line of await page.evaluate<string[]>("globalThis.benchOut")) console.log(line);
      } finally {
        await page.close();
      }
    }
  } finally {
    server.close();
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}

/**
 * castAsync in the browser: tensorcast/web's Web Workers against the single-threaded cast and
 * castInto and a memory copy, in headless Chromium on a cross-origin isolated page (or, with
 * --not-isolated, one without shared memory, where the ranges are copied to the workers and back).
 *
 *   npm run bench:browser-async [-- --n 16777216 --reps 7 --warmup 2 --threads 2 --not-isolated]
 *
 * The compiled modules under build/ are served as they are (scripts/playground.mjs's server, with
 * the isolation headers) and bench/browser-async-page.ts runs there; contenders take turns round by
 * round, with a collection before each. Columns: million elements per second (median), and for the
 * castIntoAsync variants the fraction of the memory-copy bound (a copy reading and writing as many
 * bytes as the cast), the ratio issue 6's 40% target speaks of.
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import type { DTypeName } from "../src/dtype/table.js";
import { chromiumLaunchOptions, engineMissing } from "../test/browser/engines.js";
import { playgroundScript, ROOT } from "../test/browser/support.js";
import { CONTENDERS, type AsyncBenchOptions, type runAsyncBench } from "./browser-async-page.js";

const PAIRS: [DTypeName, DTypeName][] = [
  ["float32", "float16"], ["float16", "float32"], ["float32", "bfloat16"], ["bfloat16", "float32"],
  ["float32", "float8e4m3fn"], ["float8e4m3fn", "float32"],
];

function parseArgs(argv: string[]): AsyncBenchOptions & { isolated: boolean } {
  const o = { n: 16 * 1024 * 1024, reps: 7, warmup: 2, threads: 2, pairs: PAIRS, isolated: true };
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], Number(argv[i + 1])];
    if (k === "--not-isolated") {
      o.isolated = false;
      i--;
    } else if (k === "--n") o.n = v;
    else if (k === "--reps") o.reps = v;
    else if (k === "--warmup") o.warmup = v;
    else if (k === "--threads") o.threads = v;
    else throw new Error(`unknown argument ${k}; expected --n, --reps, --warmup, --threads or --not-isolated`);
  }
  if (!(o.n > 0 && o.reps >= 1 && o.warmup >= 0 && o.threads >= 2)) throw new Error("--n, --reps positive, --warmup >= 0, --threads >= 2");
  return o;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const missing = engineMissing("chromium");
  if (missing) throw new Error(missing);
  const script = await playgroundScript();
  const dir = join(ROOT, "build");
  const pagePath = "bench/browser-async.html";
  await writeFile(join(dir, pagePath), `<!doctype html><meta charset="utf-8"><title>castAsync bench</title>\n` +
    `<script type="module">import { runAsyncBench } from "./browser-async-page.js"; globalThis.runAsyncBench = runAsyncBench;</script>\n`);
  const { server, url } = await script.servePlayground({ dir, port: 0, isolated: o.isolated });
  const browser = await chromium.launch(chromiumLaunchOptions({ exposeGc: true }));
  try {
    const page = await browser.newPage();
    page.on("pageerror", (e) => console.error(`  [page] ${e.message}`));
    await page.goto(new URL(pagePath, url).href);
    await page.waitForFunction(() => typeof (globalThis as { runAsyncBench?: unknown }).runAsyncBench === "function");
    const load0 = os.loadavg().map((x) => x.toFixed(2)).join(" ");
    const r = await page.evaluate((opts) => (globalThis as unknown as { runAsyncBench: typeof runAsyncBench }).runAsyncBench(opts), o);
    const load1 = os.loadavg().map((x) => x.toFixed(2)).join(" ");
    console.log(`Chromium ${browser.version()}, cross-origin isolated ${r.isolated}, hardwareConcurrency ${r.cores}; ` +
      `${os.cpus()[0]?.model ?? "?"} x ${os.cpus().length}; n = ${o.n}, threads ${o.threads}; median of ${o.reps} after ${o.warmup}; load ${load0} -> ${load1}`);
    console.log(`| pair | ${CONTENDERS.map((c) => `${c} M/s`).join(" | ")} | castIntoAsync / mem | shared-in / mem | wrong bytes |`);
    console.log(`|---|${CONTENDERS.map(() => "---:").join("|")}|---:|---:|---|`);
    for (const row of r.rows) {
      const rate = (c: string): number => o.n / row.ms[c] / 1e3;
      const mem = rate("memcpy");
      console.log(`| ${row.from} -> ${row.to} | ${CONTENDERS.map((c) => rate(c).toFixed(0)).join(" | ")} | ` +
        `${((100 * rate("castIntoAsync")) / mem).toFixed(0)}% | ${((100 * rate("castIntoAsync shared-in")) / mem).toFixed(0)}% | ${row.wrong.join(", ") || "none"} |`);
    }
    if (r.rows.some((row) => row.wrong.length > 0)) process.exitCode = 1;
  } finally {
    await browser.close();
    server.close();
  }
}

await main();

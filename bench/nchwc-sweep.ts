/**
 * Hunts the onnxruntime 1.30 crash of issue 15 ("the process dies on a float16 graph with the
 * default options; disabling NchwcTransformer avoids it"). Every model runs in onnxruntime-node at
 * graphOptimizationLevel "all" (which includes NchwcTransformer on x86-64 with AVX2 / AVX-512) in a
 * child process, so a crash is counted instead of ending the sweep; the jobs after a crash run in a
 * fresh child.
 *
 * Models: random float32 CNN graphs and ViT / CLIP-style front ends (a patch-embedding Conv, then a
 * transformer block; test/io/precision/cnn-graphs.ts), each run as float32 and in
 * six conversions (float16 graph with float16 or float32 io, with Conv or every NCHWc-rewritten op
 * blocked so that float32 islands sit between Casts, float16 and float8e4m3fn weights only); then
 * the official ONNX backend node tests with float32 inputs, converted to float16 with and without
 * --keep-io-types. Not a test: it prints counts, and every crash with its graph's layers.
 *
 *   node build/bench/nchwc-sweep.js [GRAPHS=200] [--no-backend]
 */
import { existsSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { TensorcastError } from "../src/errors.js";
import { decodeModel } from "../src/io/onnx/model.js";
import { convertModelPrecision, DEFAULT_BLOCKED_OPS, type PrecisionOptions } from "../src/io/onnx/precision/model.js";
import { BACKEND_TESTS, loadBackendTests } from "../test/io/precision/backend-tests.js";
import { cnnGraph, vitGraph } from "../test/io/precision/cnn-graphs.js";
import { runInChild, tempModels, type RunFeed, type RunJob, type RunResult } from "../test/io/precision/ort-run.js";

const NCHWC_OPS = ["Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "Concat", "Transpose", "BatchNormalization", "Add", "Relu"];

interface Variant {
  label: string;
  opts?: PrecisionOptions;
  /** The converted graph's float32 inputs are float16. */
  f16Io?: boolean;
}

const VARIANTS: Variant[] = [
  { label: "float32" },
  { label: "float16", opts: { to: "float16" }, f16Io: true },
  { label: "float16 keep-io", opts: { to: "float16", keepIoTypes: true } },
  { label: "float16 Conv blocked", opts: { to: "float16", blockOps: [...DEFAULT_BLOCKED_OPS, "Conv"] }, f16Io: true },
  { label: "float16 keep-io, NCHWc ops blocked", opts: { to: "float16", keepIoTypes: true, blockOps: [...DEFAULT_BLOCKED_OPS, ...NCHWC_OPS] } },
  { label: "float16 weights", opts: { to: "float16", weightsOnly: true } },
  { label: "float8e4m3fn weights", opts: { to: "float8e4m3fn" } },
];

interface Job extends RunJob {
  model: string;
  variant: string;
  layers: string;
}

/** Runs every job; a crash ends its child, and the rest go on in a new one. */
function runAll(jobs: Job[]): { results: RunResult[]; crashes: Job[] } {
  const results: RunResult[] = [];
  const crashes: Job[] = [];
  let at = 0;
  while (at < jobs.length) {
    const batch = jobs.slice(at, at + 60);
    const got = runInChild(batch);
    const crash = got.findIndex((r) => !r.ok && r.error.startsWith("onnxruntime's process ended"));
    if (crash < 0) {
      results.push(...got);
      at += batch.length;
      continue;
    }
    results.push(...got.slice(0, crash + 1));
    crashes.push(batch[crash]);
    process.stderr.write(`CRASH ${batch[crash].model} [${batch[crash].variant}] ${batch[crash].layers}: ${(got[crash] as { error: string }).error}\n`);
    at += crash + 1;
  }
  return { results, crashes };
}

function feedsFor(feeds: RunFeed[], f16Io: boolean | undefined): RunFeed[] {
  return feeds.map((f) => ({ ...f, type: f16Io && f.type === "float32" ? "float16" : f.type }));
}

/** Largest |a - b| / max(1, |a|) over the first output of both runs. */
function worstDiff(base: RunResult, got: RunResult): number {
  if (!base.ok || !got.ok) return NaN;
  let worst = 0;
  for (const [name, want] of Object.entries(base.outputs)) {
    const out = got.outputs[name];
    if (!out) return Infinity;
    for (let i = 0; i < want.values.length; i++) {
      const a = want.values[i];
      const b = out.values[i];
      if (a === b || (Number.isNaN(a) && Number.isNaN(b))) continue;
      const e = Math.abs(a - b) / Math.max(1, Math.abs(a));
      if (!(e <= worst)) worst = e;
    }
  }
  return worst;
}

const graphs = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 200);
const store = tempModels();
const started = Date.now();
try {
  const jobs: Job[] = [];
  const refused: string[] = [];
  const layerCounts = new Map<string, number>();
  const vits = Math.ceil(graphs / 4);
  for (let i = 0; i < graphs + vits; i++) {
    const g = i < graphs ? cnnGraph(i) : vitGraph(i - graphs);
    for (const l of g.layers) layerCounts.set(l, (layerCounts.get(l) ?? 0) + 1);
    for (const v of VARIANTS) {
      let bytes = g.bytes;
      if (v.opts) {
        try {
          bytes = convertModelPrecision(g.bytes, v.opts).bytes;
        } catch (e) {
          if (!(e instanceof TensorcastError)) throw e;
          refused.push(`${g.name} [${v.label}]: ${e.code}`);
          continue;
        }
      }
      const path = store.path(`${g.name}.${jobs.length}.onnx`, bytes);
      jobs.push({ path, feeds: feedsFor(g.feeds, v.f16Io), level: "all", optimizedPath: `${path}.optimized.onnx`, model: g.name, variant: v.label, layers: `opset ${g.opset}: ${g.layers.join(" ")}` });
    }
  }
  const { results, crashes } = runAll(jobs);
  // Which sessions NchwcTransformer rewrote: their optimised graphs hold com.microsoft.nchwc nodes.
  const rewritten = new Map<string, number>();
  for (const j of jobs) {
    if (!j.optimizedPath || !existsSync(j.optimizedPath)) continue;
    if (decodeModel(readFileSync(j.optimizedPath)).graph.nodes.some((n) => n.domain === "com.microsoft.nchwc")) rewritten.set(j.variant, (rewritten.get(j.variant) ?? 0) + 1);
  }
  const failures = new Map<string, number>();
  const far = new Map<string, number>();
  results.forEach((r, k) => {
    const j = jobs[k];
    if (!r.ok) failures.set(j.variant, (failures.get(j.variant) ?? 0) + 1);
    if (!r.ok && j.variant === "float32") process.stderr.write(`float32 fails: ${j.model} ${j.layers}: ${r.error.slice(0, 160)}\n`);
    const base = results[jobs.findIndex((x) => x.model === j.model && x.variant === "float32")];
    const d = worstDiff(base, r);
    if (j.variant !== "float32" && d > 0.1) far.set(j.variant, (far.get(j.variant) ?? 0) + 1);
  });
  console.log(`# NchwcTransformer sweep: onnxruntime-node, graphOptimizationLevel "all", Node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? "?"})`);
  console.log(`random CNN graphs: ${graphs}, ViT front ends: ${vits}; sessions run: ${jobs.length} (${VARIANTS.length} variants each, ${refused.length} refused conversions)`);
  console.log(`layers used: ${[...layerCounts].map(([l, n]) => `${l} ${n}`).join(", ")}`);
  console.log(`sessions with NCHWc nodes after optimisation, per variant: ${JSON.stringify(Object.fromEntries(rewritten))}`);
  console.log(`crashes: ${crashes.length}${crashes.map((c) => `\n  ${c.model} [${c.variant}] ${c.layers}`).join("")}`);
  console.log(`failed to load or run (not crashes), per variant: ${JSON.stringify(Object.fromEntries(failures))}`);
  console.log(`outputs more than 0.1 from float32, per variant: ${JSON.stringify(Object.fromEntries(far))}`);
  if (refused.length > 0) console.log(`refused: ${refused.slice(0, 10).join("; ")}`);

  if (!process.argv.includes("--no-backend")) {
    const tests = loadBackendTests();
    const backendJobs: Job[] = [];
    for (const t of tests) {
      const source = readFileSync(join(BACKEND_TESTS, t.name, "model.onnx"));
      for (const keepIoTypes of [true, false]) {
        try {
          const bytes = convertModelPrecision(source, { to: "float16", keepIoTypes }).bytes;
          backendJobs.push({ path: store.path(`${t.name}.${keepIoTypes}.onnx`, bytes), feeds: feedsFor(t.feeds, !keepIoTypes), level: "all", model: t.name, variant: keepIoTypes ? "keep-io" : "float16 io", layers: "" });
        } catch (e) {
          if (!(e instanceof TensorcastError)) throw e;
        }
      }
    }
    const b = runAll(backendJobs);
    const ran = b.results.filter((r) => r.ok).length;
    console.log(`backend node tests (float32 inputs): ${tests.length}; converted sessions run at level "all": ${backendJobs.length} (keep-io on and off); ran: ${ran}; crashes: ${b.crashes.length}${b.crashes.map((c) => ` ${c.model} [${c.variant}]`).join("")}`);
  }
  console.log(`took ${((Date.now() - started) / 1000).toFixed(0)} s`);
} finally {
  store.dispose();
}

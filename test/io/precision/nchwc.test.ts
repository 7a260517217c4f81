/**
 * onnxruntime's NchwcTransformer and converted models (issue 15's reported crash, which the sweep in
 * bench/nchwc-sweep.ts did not reproduce): float16 conversions of a CNN graph with float32 islands
 * (Resize, NonMaxSuppression, CumSum kept in float32 behind Casts; a squeeze-and-excitation Mul)
 * run at graphOptimizationLevel "all" in a child process, and the transformer really rewrites them
 * (their optimised graphs hold com.microsoft.nchwc nodes: onnxruntime runs float16 Conv in float32
 * on x86-64 CPUs, with Casts of its own, and then blocks it). The two workarounds docs/convert.md
 * gives, `graphOptimizationLevel: "basic"` (or "extended") and the session config entry
 * `optimization.disable_specified_optimizers = "NchwcTransformer"`, leave no NCHWc node, and the
 * outputs agree with level "all".
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, describe, it } from "node:test";
import { decodeModel } from "../../../src/io/onnx/model.js";
import { convertModelPrecision, DEFAULT_BLOCKED_OPS, type PrecisionOptions } from "../../../src/io/onnx/precision/model.js";
import { cnnGraph } from "./cnn-graphs.js";
import { runInChild, tempModels, type RunJob } from "./ort-run.js";

const store = tempModels();
after(() => store.dispose());

const graph = cnnGraph(0);
const VARIANTS: { label: string; opts: PrecisionOptions; f16Io: boolean }[] = [
  { label: "float16", opts: { to: "float16" }, f16Io: true },
  { label: "float16 --keep-io-types", opts: { to: "float16", keepIoTypes: true }, f16Io: false },
  { label: "float16, Conv kept in float32", opts: { to: "float16", blockOps: [...DEFAULT_BLOCKED_OPS, "Conv"] }, f16Io: true },
];
const SETTINGS: { label: string; level: RunJob["level"]; config?: Record<string, string> }[] = [
  { label: "level all", level: "all" },
  { label: "level basic", level: "basic" },
  { label: "level extended", level: "extended" },
  { label: "level all, NchwcTransformer disabled", level: "all", config: { "optimization.disable_specified_optimizers": "NchwcTransformer" } },
];

const jobs: RunJob[] = [];
for (const v of VARIANTS) {
  const path = store.path(`${v.label.replace(/\W+/g, "_")}.onnx`, convertModelPrecision(graph.bytes, v.opts).bytes);
  for (const s of SETTINGS) {
    jobs.push({
      path, level: s.level, config: s.config, optimizedPath: `${path}.${s.label.replace(/\W+/g, "_")}.optimized.onnx`,
      feeds: graph.feeds.map((f) => ({ ...f, type: v.f16Io ? "float16" : f.type })),
    });
  }
}
const runs = runInChild(jobs);

function nchwcNodes(job: RunJob): number {
  return decodeModel(readFileSync(job.optimizedPath!)).graph.nodes.filter((n) => n.domain === "com.microsoft.nchwc").length;
}

describe(`NchwcTransformer on float16 conversions of a CNN graph (${graph.layers.join(", ")})`, () => {
  VARIANTS.forEach((v, i) => {
    it(`${v.label}: runs at level "all" with NCHWc nodes; "basic", "extended" and the disabled transformer leave none and agree`, () => {
      const [all, ...others] = SETTINGS.map((_, k) => runs[i * SETTINGS.length + k]);
      for (const r of [all, ...others]) assert.ok(r.ok, !r.ok ? r.error : "");
      assert.ok(nchwcNodes(jobs[i * SETTINGS.length]) > 0, "NchwcTransformer rewrote nothing at level all: the test would prove nothing");
      SETTINGS.slice(1).forEach((s, k) => assert.equal(nchwcNodes(jobs[i * SETTINGS.length + 1 + k]), 0, `NCHWc nodes at ${s.label}`));
      if (!all.ok) return;
      const name = Object.keys(all.outputs).find((k) => all.outputs[k].type !== "int64")!;
      const want = all.outputs[name].values;
      for (const other of others) {
        if (!other.ok) continue;
        const got = other.outputs[name].values;
        assert.equal(got.length, want.length);
        // NCHWc blocks change the float32 summation order only.
        want.forEach((a, k) => assert.ok(Math.abs(got[k] - a) <= 1e-2 * Math.max(1, Math.abs(a)), `${name}[${k}]: ${got[k]} against ${a}`));
      }
    });
  });
});

/**
 * Whole-model conversion, measured (issue 15): for every test model of test/io/precision/models.ts
 * and a large MLP (4096x4096 + 4096x1024 float32 weights, 80 MiB), and for each target, the real
 * CLI (`bin/tensorcast.js convert`) runs as its own process under /usr/bin/time (wall time and peak
 * resident memory of that process), then the float32 model and the conversion run in onnxruntime-node
 * (a child process, test/io/precision/ort-run-worker.js) on the same inputs. Not a test: it prints a
 * markdown table (docs/convert.md quotes it).
 *
 *   npm run bench:models      # or: node build/bench/model-precision.js [--no-large] [--resource-usage]
 *
 * Relative difference is |a - b| / max(1, |a|), a the float32 output, as the tests measure it.
 * onnxruntime's CPU provider has no bfloat16 kernels, so the bfloat16 rows' differences are those
 * of the graph's float32 emulation (test/io/precision/bf16-emulate.ts), marked "(emulated)".
 * Without /usr/bin/time the CLI runs under a small wrapper that reports its own
 * process.resourceUsage().maxRSS at exit (the same quantity, read from inside).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { encodeModel } from "../src/io/onnx/encode.js";
import { Tensor } from "../src/tensor.js";
import { emulateBfloat16 } from "../test/io/precision/bf16-emulate.js";
import { allModels, type Feed, type TestModel } from "../test/io/precision/models.js";
import { runInChild, type RunFeed, type RunResult } from "../test/io/precision/ort-run.js";
import { Rng } from "../test/support/rng.js";

const CLI = fileURLToPath(new URL("../../bin/tensorcast.js", import.meta.url));
// --resource-usage: measure from inside the CLI process even where /usr/bin/time exists.
const TIME = process.argv.includes("--resource-usage") ? "" : "/usr/bin/time";

interface Target {
  label: string;
  args: string[];
  /** Which of the model's tolerances the tests apply (none: not tested). */
  tolerance?: keyof TestModel["tolerance"];
  /** The converted graph's float inputs are float16. */
  f16Inputs?: boolean;
  /** Also run the graph's float32 emulation (test/io/precision/bf16-emulate.ts): onnxruntime's CPU provider has no bfloat16 kernels. */
  emulate?: boolean;
}

const TARGETS: Target[] = [
  { label: "float16", args: ["--to", "float16"], tolerance: "float16", f16Inputs: true },
  { label: "float16 --keep-io-types", args: ["--to", "float16", "--keep-io-types"], tolerance: "float16" },
  // onnxruntime-node has no bfloat16 tensors to feed, so the graph keeps float32 io.
  { label: "bfloat16 --keep-io-types", args: ["--to", "bfloat16", "--keep-io-types"], tolerance: "bfloat16", emulate: true },
  { label: "float8e4m3fn (weights)", args: ["--to", "float8e4m3fn"], tolerance: "weights8" },
  // int4 rounds each weight to an integer in [-8, 7]: the models' weights are not integers, so the
  // difference says how much is lost, not that the conversion is wrong.
  { label: "int4 (weights)", args: ["--to", "int4"] },
];

/** x[1,4096] -> Gemm(4096x4096, transB) -> Relu -> MatMul(4096x1024) -> Add -> Sigmoid; 80 MiB of weights. */
function largeMlp(): BenchModel {
  const rng = new Rng(21);
  const uniform = (n: number, scale: number): Float32Array => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = (rng.u32() / 2 ** 32 * 2 - 1) * scale;
    return a;
  };
  const n = 4096;
  const m = 1024;
  const node = (opType: string, inputs: string[], outputs: string[], attributes: { name: string; type: "INT"; value: bigint }[] = []) =>
    ({ name: `${opType}_${outputs[0]}`, opType, domain: "", inputs, outputs, attributes });
  const bytes = encodeModel({
    irVersion: 8, opsetImports: [{ domain: "", version: 13 }],
    graph: {
      name: "mlp_large",
      nodes: [
        node("Gemm", ["x", "w1", "b1"], ["h1"], [{ name: "transB", type: "INT", value: 1n }]),
        node("Relu", ["h1"], ["r1"]),
        node("MatMul", ["r1", "w2"], ["h2"]),
        node("Add", ["h2", "b2"], ["h3"]),
        node("Sigmoid", ["h3"], ["y"]),
      ],
      // Scaled by ~1/sqrt(fan-in) so the activations stay near 1, as a trained layer's would.
      initializers: [
        { name: "w1", tensor: Tensor.fromStorage(uniform(n * n, 0.03), "float32", [n, n]) },
        { name: "b1", tensor: Tensor.fromStorage(uniform(n, 0.1), "float32", [n]) },
        { name: "w2", tensor: Tensor.fromStorage(uniform(n * m, 0.05), "float32", [n, m]) },
        { name: "b2", tensor: Tensor.fromStorage(uniform(m, 0.1), "float32", [m]) },
      ],
      inputs: [{ name: "x", elemType: 1, shape: [1, n] }],
      outputs: [{ name: "y", elemType: 1, shape: [1, m] }],
    },
  }, { producerName: "tensorcast-bench" });
  const x = Array.from(uniform(n, 1));
  return { name: "mlp_large (80 MiB)", bytes, feeds: [{ name: "x", type: "float32", dims: [1, n], values: x }] };
}

/** A test model, or the large one, which no test runs (no tolerance). */
type BenchModel = Omit<TestModel, "tolerance"> & { tolerance?: TestModel["tolerance"] };

interface Measured {
  seconds: number;
  rssMiB: number;
  ok: boolean;
  message: string;
}

/** Runs the CLI in a process of its own, timed from outside (or from inside, without /usr/bin/time). */
function runCli(dir: string, args: string[]): Measured {
  const stats = join(dir, "time.txt");
  rmSync(stats, { force: true });
  let r;
  if (TIME && existsSync(TIME)) {
    r = spawnSync(TIME, ["-o", stats, "-f", "%e %M", process.execPath, CLI, ...args], { encoding: "utf8" });
  } else {
    const wrapper = join(dir, "wrapper.mjs");
    writeFileSync(wrapper, [
      `import { writeFileSync } from "node:fs";`,
      `const t0 = performance.now();`,
      `process.on("exit", () => writeFileSync(${JSON.stringify(stats)}, ((performance.now() - t0) / 1000).toFixed(2) + " " + process.resourceUsage().maxRSS));`,
      `await import(${JSON.stringify(new URL(`file://${CLI}`).href)});`,
    ].join("\n"));
    r = spawnSync(process.execPath, [wrapper, ...args], { encoding: "utf8" });
  }
  const [seconds, kib] = readFileSync(stats, "utf8").trim().split(/\s+/).slice(-2).map(Number);
  return { seconds, rssMiB: kib / 1024, ok: r.status === 0, message: (r.status === 0 ? r.stdout : r.stderr).trim().split("\n").pop() ?? "" };
}

function feedsFor(feeds: Feed[], f16: boolean): RunFeed[] {
  return feeds.map((f) => ({ ...f, type: f.type === "float32" && f16 ? "float16" : f.type }));
}

/** Largest absolute and relative (to max(1, |a|)) difference over every output element. */
function compare(base: RunResult, other: RunResult, target: Target): { abs: number; rel: number } | string {
  if (!base.ok) return `float32 model failed: ${base.error}`;
  if (!other.ok) return /Could not find an implementation/.test(other.error) && target.label.startsWith("bfloat16") ? "no bf16 CPU kernels" : `failed: ${other.error.slice(0, 80)}`;
  let abs = 0;
  let rel = 0;
  for (const [name, a] of Object.entries(base.outputs)) {
    const b = other.outputs[name];
    if (!b || b.values.length !== a.values.length) return `output ${name} missing or resized`;
    for (let i = 0; i < a.values.length; i++) {
      const d = Math.abs(a.values[i] - b.values[i]);
      // NaN in the conversion only: say so rather than hide it in Math.max.
      if (Number.isNaN(d) && !(Number.isNaN(a.values[i]) && Number.isNaN(b.values[i]))) return "NaN";
      if (!(d > 0)) continue;
      abs = Math.max(abs, d);
      rel = Math.max(rel, d / Math.max(1, Math.abs(a.values[i])));
    }
  }
  return { abs, rel };
}

const fmtBytes = (n: number): string => (n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${n} B`);
const fmtDiff = (v: number): string => (v === 0 ? "0" : v.toExponential(2));

const models: BenchModel[] = [...allModels(), ...(process.argv.includes("--no-large") ? [] : [largeMlp()])];
const dir = mkdtempSync(join(tmpdir(), "tensorcast-bench-models-"));
const started = performance.now();
const rows: string[] = [];
try {
  for (const model of models) {
    const input = join(dir, `${model.name.split(" ")[0]}.onnx`);
    writeFileSync(input, model.bytes);
    const before = statSync(input).size;
    const outputs: { target: Target; path: string; measured: Measured }[] = [];
    for (const [i, target] of TARGETS.entries()) {
      const path = join(dir, `${model.name.split(" ")[0]}.${i}.onnx`);
      outputs.push({ target, path, measured: runCli(dir, ["convert", input, ...target.args, "-o", path]) });
    }
    // One onnxruntime process per model: the float32 run first, then every conversion that was written.
    const converted = outputs.filter((o) => o.measured.ok);
    const emulated = converted.filter((o) => o.target.emulate).map((o) => {
      const path = `${o.path}.emulated.onnx`;
      writeFileSync(path, emulateBfloat16(readFileSync(o.path)).bytes);
      return { o, path };
    });
    const results = runInChild([
      { path: input, feeds: feedsFor(model.feeds, false) },
      ...converted.map((o) => ({ path: o.path, feeds: feedsFor(model.feeds, o.target.f16Inputs === true) })),
      ...emulated.map((e) => ({ path: e.path, feeds: feedsFor(model.feeds, false) })),
    ]);
    for (const o of outputs) {
      const { target, path, measured } = o;
      const k = converted.indexOf(o);
      const tol = target.tolerance && model.tolerance ? String(model.tolerance[target.tolerance]) : "-";
      const cells = [model.name, target.label, fmtBytes(before)];
      if (!measured.ok) {
        cells.push("-", "-", `conversion refused: ${measured.message.slice(0, 80)}`, "-", tol);
      } else {
        const after = statSync(path).size;
        let d = compare(results[0], results[k + 1], target);
        let mark = "";
        const e = emulated.findIndex((x) => x.o === o);
        if (d === "no bf16 CPU kernels" && e >= 0) {
          // The graph itself cannot run on the CPU provider; its emulation keeps every bfloat16 rounding.
          d = compare(results[0], results[1 + converted.length + e], target);
          mark = " (emulated)";
        }
        cells.push(fmtBytes(after), `${(before / after).toFixed(2)}x`, ...(typeof d === "string" ? [d, "-"] : [fmtDiff(d.abs) + mark, fmtDiff(d.rel) + mark]), tol);
      }
      cells.push(measured.seconds.toFixed(2), measured.rssMiB.toFixed(0));
      rows.push(`| ${cells.join(" | ")} |`);
      rmSync(path, { force: true });
      rmSync(`${path}.emulated.onnx`, { force: true });
    }
    rmSync(input, { force: true });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.log(`Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), load average ${loadavg().map((l) => l.toFixed(1)).join(" ")}; ` +
  `time and peak RSS of the whole CLI process (${TIME && existsSync(TIME) ? "/usr/bin/time" : "process.resourceUsage"}); outputs compared in onnxruntime-node, graph optimisations on.\n`);
console.log("| model | target | size before | size after | ratio | max abs diff | max rel diff | tolerance used in tests | time s | peak RSS MiB |");
console.log("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const r of rows) console.log(r);
console.log(`\n(bench ran ${((performance.now() - started) / 1000).toFixed(0)} s)`);

/**
 * A model over 2 GiB in onnxruntime-node, before and after tensorcast converts it (issue 15, part 3).
 * Opt-in, not a test: it writes about 3.2 GiB to the disk and onnxruntime holds the 2 GiB of
 * weights in memory.
 *
 *   TENSORCAST_BIG=1 node build/bench/big-external.js [DIR]     # DIR: default a fresh folder in tmpdir
 *
 * model.onnx + model.data: y = Cast<float32>(Gather(emb, ids)), emb float32 [532480, 1024] (2.03 GiB,
 * generated data in the side file, every element distinct), ids int64 [4] = first, second, middle
 * and last rows. Steps, each its own process under /usr/bin/time (wall time, peak resident memory):
 *  1. write model.onnx and model.data (this script's own process, so no time figure for it);
 *  2. onnxruntime-node runs the float32 model (session created from the path, so that it finds the
 *     side file);
 *  3. `tensorcast convert model.onnx --to float16 --initializers emb -o half.onnx` (the flat
 *     conversion of the initializer, streamed; 1.02 GiB fits inline);
 *  4. `tensorcast convert model.onnx --to float16 --weights-only -o weights.onnx` (whole-model
 *     weights-only float16, which reads the model whole: reported as it ends);
 *     and the same with `--external-data half-ext.data` (the output's data in a side file);
 *  5. onnxruntime-node runs half.onnx; its y must equal float32 y cast to float16 and back, bit for
 *     bit (Gather copies rows, and Cast float16 -> float32 is exact); half-ext.onnx's y must equal it.
 */
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, statSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { timed, type Timed } from "./timed.js";
import { cast } from "../src/ops/cast.js";
import { Tensor } from "../src/tensor.js";
import type { RunJob, RunResult } from "../test/io/precision/ort-run.js";
import { W } from "../test/support/protobuf.js";

const ROWS = 532480;
const D = 1024;
const IDS = [0, 1, ROWS / 2, ROWS - 1];
const CLI = fileURLToPath(new URL("../../bin/tensorcast.js", import.meta.url));
const WORKER = fileURLToPath(new URL("../test/io/precision/ort-run-worker.js", import.meta.url));
const MiB = 2 ** 20;
const GiB = 2 ** 30;

/** Element i of emb: distinct, finite, spread over [-2, 2), cheap to make and to check. */
function value(i: number): number {
  return (((i * 2654435761) >>> 0) / 2 ** 32) * 4 - 2 + i * 2 ** -40;
}

function writeModel(dir: string): void {
  const fd = openSync(join(dir, "model.data"), "w");
  const chunk = new Float32Array(16 * MiB);
  try {
    for (let at = 0; at < ROWS * D; at += chunk.length) {
      const n = Math.min(chunk.length, ROWS * D - at);
      for (let k = 0; k < n; k++) chunk[k] = value(at + k);
      writeSync(fd, new Uint8Array(chunk.buffer, 0, 4 * n));
    }
  } finally {
    closeSync(fd);
  }
  const bytes = ROWS * D * 4;
  const entry = (k: string, v: string): W => new W().len(1, k).len(2, v);
  const emb = new W().int(1, ROWS).int(1, D).int(2, 1).len(8, "emb")
    .len(13, entry("location", "model.data")).len(13, entry("offset", "0")).len(13, entry("length", String(bytes))).int(14, 1);
  const tensorType = (elem: number, dims: number[]): W => {
    const shape = new W();
    for (const d of dims) shape.len(1, new W().int(1, d));
    return new W().len(1, new W().int(1, elem).len(2, shape));
  };
  const graph = new W()
    .len(1, new W().len(1, "emb").len(1, "ids").len(2, "rows").len(3, "gather").len(4, "Gather"))
    .len(1, new W().len(1, "rows").len(2, "y").len(3, "cast").len(4, "Cast").len(5, new W().len(1, "to").int(3, 1).int(20, 2)))
    .len(2, "big")
    .len(5, emb)
    .len(11, new W().len(1, "ids").len(2, tensorType(7, [IDS.length])))
    .len(12, new W().len(1, "y").len(2, tensorType(1, [IDS.length, D])));
  const model = new W().int(1, 8).len(8, new W().len(1, "").int(2, 13)).len(7, graph).len(2, "tensorcast-bench");
  writeFileSync(join(dir, "model.onnx"), model.bytes());
}


function ortRun(dir: string, model: string): { run: RunResult; t: Timed } {
  const job: RunJob = { path: join(dir, model), byPath: true, feeds: [{ name: "ids", type: "int64", dims: [IDS.length], values: IDS }] };
  const list = join(dir, `${model}.jobs.json`);
  writeFileSync(list, JSON.stringify([job]));
  const t = timed([process.execPath, WORKER, list]);
  const line = t.stdout.split("\n").find((l) => l.startsWith("R "));
  return { run: line ? (JSON.parse(line.slice(2)) as RunResult) : { ok: false, error: `status ${t.status}: ${t.stderr.slice(-300)}` }, t };
}

if (process.env.TENSORCAST_BIG !== "1") {
  console.log("skipped: set TENSORCAST_BIG=1 (writes about 3.2 GiB, and onnxruntime holds 2 GiB in memory)");
  process.exit(0);
}
const dir = process.argv[2] ?? mkdtempSync(join(tmpdir(), "tensorcast-big-"));
const free = (() => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
})();
if (free < 5 * GiB) {
  console.log(`skipped: ${dir} has ${(free / GiB).toFixed(1)} GiB free; this needs 5 GiB`);
  process.exit(0);
}
const report = (label: string, t: Timed, extra = ""): void => console.log(`| ${label} | ${t.status === 0 ? "ok" : `exit ${t.status}`} | ${t.seconds.toFixed(1)} | ${t.peakMiB.toFixed(0)} | ${extra} |`);
try {
  const started = performance.now();
  writeModel(dir);
  const inputBytes = statSync(join(dir, "model.data")).size;
  console.log(`# model.onnx ${statSync(join(dir, "model.onnx")).size} B + model.data ${inputBytes} B (${(inputBytes / GiB).toFixed(3)} GiB), written in ${((performance.now() - started) / 1000).toFixed(1)} s; Node ${process.version}`);
  console.log("| step | result | wall s | peak RSS MiB | notes |\n|---|---|---:|---:|---|");
  const base = ortRun(dir, "model.onnx");
  report("onnxruntime-node runs the float32 model (2.03 GiB external)", base.t, base.run.ok ? "" : base.run.error);
  const half = timed([process.execPath, CLI, "convert", join(dir, "model.onnx"), "--to", "float16", "--initializers", "emb", "-o", join(dir, "half.onnx")]);
  report("tensorcast convert --initializers emb --to float16", half, half.status === 0 ? `half.onnx ${(statSync(join(dir, "half.onnx")).size / GiB).toFixed(3)} GiB` : half.stderr.trim().split("\n").at(-1));
  const side = timed([process.execPath, CLI, "convert", join(dir, "model.onnx"), "--to", "float16", "--initializers", "emb", "--external-data", "half-ext.data", "-o", join(dir, "half-ext.onnx")]);
  report("the same with --external-data half-ext.data", side, side.status === 0 ? `half-ext.data ${(statSync(join(dir, "half-ext.data")).size / GiB).toFixed(3)} GiB` : side.stderr.trim().split("\n").at(-1));
  const whole = timed([process.execPath, CLI, "convert", join(dir, "model.onnx"), "--to", "float16", "--weights-only", "-o", join(dir, "weights.onnx")]);
  report("tensorcast convert --weights-only --to float16 (whole model)", whole, whole.status === 0 ? "" : whole.stderr.trim().split("\n").at(-1));
  const convExt = ortRun(dir, "half-ext.onnx");
  const conv = ortRun(dir, "half.onnx");
  let verdict = conv.run.ok ? "" : conv.run.error;
  if (base.run.ok && conv.run.ok) {
    const want = cast(cast(Tensor.fromValues(base.run.outputs.y.values, "float32"), "float16"), "float32").data as Float32Array;
    const got = conv.run.outputs.y.values;
    let differ = 0;
    for (let i = 0; i < want.length; i++) if (!Object.is(want[i], got[i])) differ++;
    // The float32 run read the generated data back: check it too.
    let wrong = 0;
    IDS.forEach((row, r) => {
      for (let k = 0; k < D; k++) if (base.run.ok && base.run.outputs.y.values[r * D + k] !== Math.fround(value(row * D + k))) wrong++;
    });
    verdict = `y: ${want.length - differ} of ${want.length} equal to float32 y cast to float16 and back; float32 y: ${IDS.length * D - wrong} of ${IDS.length * D} equal to the generated data`;
  }
  report("onnxruntime-node runs half.onnx (1.02 GiB inline)", conv.t, verdict);
  const same = convExt.run.ok && conv.run.ok && convExt.run.outputs.y.values.every((v, i) => Object.is(v, conv.run.ok ? conv.run.outputs.y.values[i] : NaN));
  report("onnxruntime-node runs half-ext.onnx (side file)", convExt.t, convExt.run.ok ? `y ${same ? "equal to" : "DIFFERS from"} half.onnx's` : convExt.run.error);
  console.log(`# total ${((performance.now() - started) / 1000).toFixed(0)} s`);
} finally {
  if (process.argv[2] === undefined) rmSync(dir, { recursive: true, force: true });
}

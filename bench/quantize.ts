/**
 * `npm run bench:quantize`: QuantizeLinear / DequantizeLinear on 4 Mi elements, tensorcast against
 * onnxruntime-node in the same run, with the memory-copy bound beside them.
 *
 * Contenders, each timed per call (fastest and median of --reps calls, the contenders taking turns),
 * with the median minor page faults per call (process.resourceUsage(): every thread):
 * - "tensorcast": quantizeLinear / dequantizeLinear on ordinary typed arrays, a fresh output each
 *   call (its allocation and page faults included): the WebAssembly SIMD kernels, streamed through
 *   their memory in chunks (copy in, convert, copy out).
 * - "+dispose": the same, the output disposed after each call, so that the next call's output is
 *   the pooled memory, without page faults (Node 22+ and browsers with ArrayBuffer.transfer; on
 *   Node 20 dispose() pools nothing and this is "tensorcast" again), as bench/cast.ts's cast()+dispose.
 * - "2T", "2T+dispose": the same two with the quantize helper thread on (tensorcast/node's
 *   useQuantizeThread, src/kernels/quant/pipeline.ts): this thread copies the chunks in and out
 *   while the helper runs the kernels. Its worker is started before timing.
 * - "arena": quantizeLinearInto / dequantizeLinearInto with the input (copied in, untimed) and the
 *   output in one arena (createArena): the same kernels in place on the arena's memory, no copies.
 * - "reference" (with --reference only: it is about 100x slower): the exact scalar kernels
 *   (useQuantSimd(false)), the median of 3 calls.
 * - "ORT": an InferenceSession of one QuantizeLinear / DequantizeLinear node (opset 21, scale and
 *   zero point as graph inputs), with the session options bench/cast.ts uses: intraOpNumThreads 1,
 *   interOpNumThreads 1, sequential, graph optimisation disabled, so ORT runs on one thread as our
 *   kernels do ("ORT 2T": intraOpNumThreads 2, its pool thread not spinning between runs, to set beside "2T"); timed: the input ort.Tensors, session.run and the output's data. Not for int4 /
 *   uint4 (onnxruntime-node 1.30 aborts the process on an int4 output, exit 134, and session.run
 *   rejects an int4 feed), float8e4m3fn, float4e2m1 and e8m0 scales (onnxruntime-common's Tensor has
 *   no float8 / float4 / e8m0 types, so the JS API can neither feed nor fetch them).
 * - "memcpy": Uint8Array.prototype.set copying the bytes the call reads plus writes, halved (one
 *   read and one write per byte): what no conversion through memory can beat.
 * Before timing, our bytes are compared with ORT's (and the arena's with the plain call's).
 *
 * Arguments: --n N (elements, a multiple of 32 * 1024, default 4 Mi), --reps R (default 15),
 * --reference, --only SUBSTRING (paths whose name contains it), --hog K (K busy-looping processes
 * for the whole run: a loaded machine, where the helper thread competes for a core).
 */
import * as ort from "onnxruntime-node";
import { spawn } from "node:child_process";
import { cpus, loadavg } from "node:os";
import { Tensor, createArena, dequantizeLinear, dequantizeLinearInto, quantizeLinear, quantizeLinearInto, type DTypeName } from "../src/index.js";
import { setQuantStreamHelper, useQuantSimd, type StreamHelper } from "../src/kernels/quant/simd.js";
import { quantizeThreadChunks, useQuantizeThread } from "../src/node/quant-helper.js";
import { buildModel } from "../test/support/onnx-model.js";
import { Rng } from "../test/support/rng.js";

const FLOAT = 1;
const ONNX: Record<string, number> = { int8: 3, uint8: 2, float32: 1 };

interface Path {
  name: string;
  op: "QuantizeLinear" | "DequantizeLinear";
  /** The quantized type: the output of QuantizeLinear, the input of DequantizeLinear. */
  q: DTypeName;
  /** Per-tensor, per-axis along axis 0, or blocked by 32 along the last axis. */
  how: "tensor" | "axis" | "block32";
  /** Scales as float8e8m0 codes (MX) instead of float32. */
  e8m0?: boolean;
}

function argValue(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}
const only = process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1] : "";
const withReference = process.argv.includes("--reference");
const n = argValue("--n", 4 * 1024 * 1024);
const reps = argValue("--reps", 15);
const rows = 1024;
const cols = n / rows;

const PATHS: Path[] = [
  { name: "f32->int8 per tensor", op: "QuantizeLinear", q: "int8", how: "tensor" },
  { name: "f32->uint8 per tensor", op: "QuantizeLinear", q: "uint8", how: "tensor" },
  { name: "f32->int8 per axis", op: "QuantizeLinear", q: "int8", how: "axis" },
  { name: "int8->f32 per tensor", op: "DequantizeLinear", q: "int8", how: "tensor" },
  { name: "uint8->f32 per axis", op: "DequantizeLinear", q: "uint8", how: "axis" },
  { name: "f32->int4 blocked 32", op: "QuantizeLinear", q: "int4", how: "block32" },
  { name: "int4->f32 blocked 32", op: "DequantizeLinear", q: "int4", how: "block32" },
  { name: "f32->e4m3fn blocked 32", op: "QuantizeLinear", q: "float8e4m3fn", how: "block32" },
  { name: "e4m3fn->f32 blocked 32", op: "DequantizeLinear", q: "float8e4m3fn", how: "block32" },
  { name: "MX f32->fp4 (e8m0, 32)", op: "QuantizeLinear", q: "float4e2m1", how: "block32", e8m0: true },
  { name: "MX fp4->f32 (e8m0, 32)", op: "DequantizeLinear", q: "float4e2m1", how: "block32", e8m0: true },
  { name: "MX f32->fp8 (e8m0, 32)", op: "QuantizeLinear", q: "float8e4m3fn", how: "block32", e8m0: true },
  { name: "MX fp8->f32 (e8m0, 32)", op: "DequantizeLinear", q: "float8e4m3fn", how: "block32", e8m0: true },
];

interface Timing {
  min: number;
  median: number;
  faults: number;
}

const median = (v: number[]): number => [...v].sort((a, b) => a - b)[v.length >> 1];

async function time(contenders: Record<string, () => unknown | Promise<unknown>>, calls: (name: string) => number): Promise<Record<string, Timing>> {
  const wall: Record<string, number[]> = {};
  const faults: Record<string, number[]> = {};
  for (const name of Object.keys(contenders)) {
    wall[name] = [];
    faults[name] = [];
    await contenders[name](); // warm-up
  }
  const most = Math.max(...Object.keys(contenders).map(calls));
  for (let r = 0; r < most; r++) {
    for (const [name, run] of Object.entries(contenders)) {
      if (r >= calls(name)) continue;
      const f0 = process.resourceUsage().minorPageFault;
      const t0 = performance.now();
      await run();
      wall[name].push(performance.now() - t0);
      faults[name].push(process.resourceUsage().minorPageFault - f0);
    }
  }
  return Object.fromEntries(Object.keys(contenders).map((k) => [k, { min: Math.min(...wall[k]), median: median(wall[k]), faults: median(faults[k]) }]));
}

const unit = (rng: Rng): number => rng.u32() / 4294967296;

async function runPath(p: Path, rng: Rng): Promise<string[]> {
  const shape = p.how === "tensor" ? [n] : [rows, cols];
  const scaleShape = p.how === "tensor" ? [] : p.how === "axis" ? [rows] : [rows, cols / 32];
  const scaleCount = scaleShape.reduce((a, b) => a * b, 1);
  const scales = Float32Array.from({ length: scaleCount }, () => Math.fround(0.01 + unit(rng) * 0.05));
  const scale = p.e8m0
    ? Tensor.fromStorage(Uint8Array.from({ length: scaleCount }, () => 124 + Math.floor(unit(rng) * 4)), "float8e8m0", scaleShape)
    : Tensor.fromStorage(scales, "float32", scaleShape);
  const integer = p.q.includes("int");
  const lo = p.q === "int8" ? -128 : p.q === "int4" ? -8 : 0;
  const span = p.q.endsWith("4") ? 8 : 50;
  const zp = integer ? Tensor.fromValues(Array.from({ length: scaleCount }, () => lo + Math.floor(unit(rng) * span)), p.q, scaleShape) : undefined;
  const axisOpts = p.how === "tensor" ? {} : p.how === "axis" ? { axis: 0 } : { axis: 1, blockSize: 32 };
  const x = Tensor.fromStorage(Float32Array.from({ length: n }, () => Math.fround((unit(rng) - 0.5) * 6)), "float32", shape);
  const quantized = quantizeLinear(x, scale, zp, { ...axisOpts, outputDtype: p.q });
  const arena = createArena(n * 8 + (1 << 20));
  let call: () => Tensor;
  let inArena: () => Tensor;
  let input: Tensor;
  const qOpts = { ...axisOpts, outputDtype: p.q };
  const dOpts = { ...axisOpts, outputDtype: "float32" as const };
  if (p.op === "QuantizeLinear") {
    input = x;
    const xa = arena.from(x);
    const out = arena.zeros(p.q, shape);
    call = () => quantizeLinear(x, scale, zp, qOpts);
    inArena = () => quantizeLinearInto(xa, scale, zp, out, qOpts);
  } else {
    input = quantized;
    const qa = arena.from(quantized);
    const out = arena.zeros("float32", shape);
    call = () => dequantizeLinear(quantized, scale, zp, dOpts);
    inArena = () => dequantizeLinearInto(qa, scale, zp, out, dOpts);
  }
  const ours = call().bytes();
  const twoThreads = <T>(f: () => T): T => {
    setQuantStreamHelper(helper);
    try {
      return f();
    } finally {
      setQuantStreamHelper(undefined);
    }
  };
  const helped0 = quantizeThreadChunks();
  const twoAgrees = Buffer.compare(Buffer.from(ours), Buffer.from(twoThreads(call).bytes())) === 0;
  await new Promise((r) => setTimeout(r, 100)); // the helper thread starts

  const arenaAgrees = Buffer.compare(Buffer.from(ours), Buffer.from(inArena().bytes())) === 0;
  let ortRun: (() => Promise<unknown>) | undefined;
  let ort2Run: (() => Promise<unknown>) | undefined;
  let session2: ort.InferenceSession | undefined;
  let agree = "no ORT";
  let session: ort.InferenceSession | undefined;
  if (ONNX[p.q] !== undefined && !p.e8m0) {
    const xType = p.op === "QuantizeLinear" ? FLOAT : ONNX[p.q];
    const yType = p.op === "QuantizeLinear" ? ONNX[p.q] : FLOAT;
    const attributes = [
      ...(p.how === "tensor" ? [] : [{ name: "axis", type: "INT" as const, i: p.how === "axis" ? 0 : 1 }]),
      ...(p.how === "block32" ? [{ name: "block_size", type: "INT" as const, i: 32 }] : []),
    ];
    const model = buildModel({
      inputs: [{ name: "x", elemType: xType, shape }, { name: "s", elemType: FLOAT, shape: scaleShape }, { name: "z", elemType: ONNX[p.q], shape: scaleShape }],
      outputs: [{ name: "y", elemType: yType, shape }],
      nodes: [{ opType: p.op, inputs: ["x", "s", "z"], outputs: ["y"], attributes }],
      opset: 21, irVersion: 10,
    });
    session = await ort.InferenceSession.create(model, {
      intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: "sequential", graphOptimizationLevel: "disabled",
    });
    // Without spinning: ORT's pool thread otherwise spins after each run, on the core the next contender needs.
    session2 = await ort.InferenceSession.create(model, {
      intraOpNumThreads: 2, interOpNumThreads: 1, executionMode: "sequential", graphOptimizationLevel: "disabled",
      extra: { session: { intra_op: { allow_spinning: "0" } } },
    });
    const zpData = zp!.bytes().slice();
    const runOn = (s: ort.InferenceSession) => async () => {
      const feeds = {
        x: new ort.Tensor(p.op === "QuantizeLinear" ? "float32" : (p.q as "int8"), input.data as never, shape),
        s: new ort.Tensor("float32", scales, scaleShape),
        z: new ort.Tensor(p.q as "int8", (p.q === "int8" ? new Int8Array(zpData.buffer) : zpData) as never, scaleShape),
      };
      const r = await s.run(feeds);
      return (r.y.data as Uint8Array).buffer;
    };
    ortRun = runOn(session);
    ort2Run = runOn(session2);
    const theirs = new Uint8Array((await ortRun()) as ArrayBuffer);
    agree = ours.length === theirs.length && ours.every((b, i) => b === theirs[i]) ? "equal" : "DIFFER";
  }
  const bytes = p.op === "QuantizeLinear" ? input.bytes().length + quantized.bytes().length : quantized.bytes().length + 4 * n;
  const src = new Uint8Array(bytes);
  const dst = new Uint8Array(bytes);
  const contenders: Record<string, () => unknown> = {
    tensorcast: call, "+dispose": () => call().dispose(), "2T": () => twoThreads(call), "2T+dispose": () => twoThreads(call).dispose(), arena: inArena,
  };
  if (withReference) {
    contenders.reference = () => {
      useQuantSimd(false);
      try {
        return call();
      } finally {
        useQuantSimd(true);
      }
    };
  }
  if (ortRun) contenders.ORT = ortRun;
  if (ort2Run) contenders["ORT 2T"] = ort2Run;
  contenders.memcpy = () => dst.set(src.subarray(0, bytes >> 1));
  const t = await time(contenders, (name) => (name === "reference" ? 3 : reps));
  await session?.release();
  await session2?.release();
  const helped = quantizeThreadChunks() - helped0;
  const rate = (ms: number): string => (n / ms / 1000).toFixed(0);
  const cell = (k: string): string => (t[k] ? `${rate(t[k].median)} (${rate(t[k].min)})` : "-");
  const ratio = (a: string, b: string): string => (t[b] ? `${(t[b].median / t[a].median).toFixed(2)}x (${(t[b].min / t[a].min).toFixed(2)}x)` : "-");
  const faults = ["tensorcast", "+dispose", "2T", "arena", "ORT"].map((k) => (t[k] ? String(t[k].faults) : "-")).join(" / ");
  return [
    p.name, cell("tensorcast"), cell("+dispose"), cell("2T"), cell("2T+dispose"), cell("arena"), ...(withReference ? [cell("reference")] : []), cell("ORT"), cell("ORT 2T"), cell("memcpy"),
    ratio("tensorcast", "ORT"), ratio("+dispose", "ORT"), ratio("2T", "ORT"), ratio("2T+dispose", "ORT"), ratio("2T+dispose", "ORT 2T"), ratio("arena", "ORT"), faults, String(helped),
    `${agree}${arenaAgrees ? "" : "; ARENA DIFFERS"}${twoAgrees ? "" : "; 2T DIFFERS"}`,
  ];
}

let helper: StreamHelper | undefined;

async function main(): Promise<void> {
  const rng = new Rng(42);
  const hogs = Array.from({ length: argValue("--hog", 0) }, () => spawn(process.execPath, ["-e", "for (;;);"], { stdio: "ignore" }));
  process.on("exit", () => hogs.forEach((h) => h.kill()));
  if (hogs.length > 0) console.log(`${hogs.length} busy-looping processes run beside the bench`);
  useQuantizeThread(true);
  helper = setQuantStreamHelper(undefined);
  console.log(`QuantizeLinear / DequantizeLinear, ${n} elements, ${reps} calls each; Node ${process.version}, onnxruntime-node ${ort.env.versions?.node ?? "?"} (1 intra-op thread), ${cpus()[0]?.model ?? "?"}, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  console.log("M elements/s, median (best); ratios to ORT by the median (by the best); faults per call, median: plain / +dispose / 2T / arena / ORT; chunks the helper thread ran\n");
  const head = [
    "path", "tensorcast", "+dispose", "2T", "2T+dispose", "arena", ...(withReference ? ["reference"] : []), "ORT", "ORT 2T", "memcpy",
    "tensorcast/ORT", "+dispose/ORT", "2T/ORT", "2T+dispose/ORT", "2T+dispose/ORT 2T", "arena/ORT", "faults", "helper chunks", "bytes vs ORT",
  ];
  const table: string[][] = [head, head.map(() => "---")];
  for (const p of PATHS) if (p.name.includes(only)) table.push(await runPath(p, rng));
  for (const r of table) console.log(`| ${r.join(" | ")} |`);
  console.log(`\nload after: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  for (const h of hogs) h.kill();
}

await main();

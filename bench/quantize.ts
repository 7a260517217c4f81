/**
 * `npm run bench:quantize`: QuantizeLinear / DequantizeLinear on 4 Mi elements, tensorcast against
 * onnxruntime-node in the same run, with the memory-copy bound beside them.
 *
 * Contenders, each timed per call (fastest and median of --reps calls, the contenders taking turns),
 * with the median minor page faults per call (process.resourceUsage(): every thread):
 * - "tensorcast": quantizeLinear / dequantizeLinear on ordinary typed arrays, a fresh output each
 *   call (its allocation and page faults included): the WebAssembly SIMD path where it applies.
 * - "reference": the same with the SIMD path switched off (useQuantSimd(false)): the exact scalar
 *   kernels every other combination runs on.
 * - "ORT": an InferenceSession of one QuantizeLinear / DequantizeLinear node (opset 21, scale and
 *   zero point as graph inputs); timed: the input ort.Tensors, session.run and the output's data.
 * - "memcpy": Uint8Array.prototype.set copying the bytes the call reads plus writes, halved (one
 *   read and one write per byte): what no conversion through memory can beat.
 *
 * Arguments: --n N (elements, default 4 Mi), --reps R (default 15).
 */
import * as ort from "onnxruntime-node";
import { cpus, loadavg } from "node:os";
import { Tensor, dequantizeLinear, quantizeLinear, type DTypeName } from "../src/index.js";
import { useQuantSimd } from "../src/kernels/quant/simd.js";
import { buildModel } from "../test/support/onnx-model.js";
import { Rng } from "../test/support/rng.js";

const FLOAT = 1;
const ONNX: Record<string, number> = { int8: 3, uint8: 2, float32: 1 };

interface Path {
  name: string;
  op: "QuantizeLinear" | "DequantizeLinear";
  /** The integer type: the output of QuantizeLinear, the input of DequantizeLinear. */
  int: "int8" | "uint8";
  shape: number[];
  /** Per-axis along this axis when given; per-tensor otherwise. */
  axis?: number;
}

function argValue(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const n = argValue("--n", 4 * 1024 * 1024);
const reps = argValue("--reps", 15);
const rows = 1024;

const PATHS: Path[] = [
  { name: "f32->int8 per tensor", op: "QuantizeLinear", int: "int8", shape: [n] },
  { name: "f32->uint8 per tensor", op: "QuantizeLinear", int: "uint8", shape: [n] },
  { name: "f32->int8 per axis", op: "QuantizeLinear", int: "int8", shape: [rows, n / rows], axis: 0 },
  { name: "int8->f32 per tensor", op: "DequantizeLinear", int: "int8", shape: [n] },
  { name: "uint8->f32 per axis", op: "DequantizeLinear", int: "uint8", shape: [rows, n / rows], axis: 0 },
];

interface Timing {
  min: number;
  median: number;
  faults: number;
}

const median = (v: number[]): number => [...v].sort((a, b) => a - b)[v.length >> 1];

async function time(contenders: Record<string, () => unknown | Promise<unknown>>, calls: number): Promise<Record<string, Timing>> {
  const wall: Record<string, number[]> = {};
  const faults: Record<string, number[]> = {};
  for (const name of Object.keys(contenders)) {
    wall[name] = [];
    faults[name] = [];
    await contenders[name](); // warm-up
  }
  for (let r = 0; r < calls; r++) {
    for (const [name, run] of Object.entries(contenders)) {
      const f0 = process.resourceUsage().minorPageFault;
      const t0 = performance.now();
      await run();
      wall[name].push(performance.now() - t0);
      faults[name].push(process.resourceUsage().minorPageFault - f0);
    }
  }
  return Object.fromEntries(Object.keys(contenders).map((k) => [k, { min: Math.min(...wall[k]), median: median(wall[k]), faults: median(faults[k]) }]));
}

async function runPath(p: Path, rng: Rng): Promise<string[]> {
  const count = p.shape.reduce((a, b) => a * b, 1);
  const scaleShape = p.axis === undefined ? [] : [p.shape[p.axis]];
  const scales = Float32Array.from({ length: Math.max(1, scaleShape[0] ?? 1) }, () => Math.fround(0.01 + (rng.u32() / 4294967296) * 0.05));
  const lo = p.int === "int8" ? -128 : 0;
  const zps = Array.from({ length: scales.length }, () => lo + 100 + Math.floor((rng.u32() / 4294967296) * 50));
  const scale = Tensor.fromStorage(scales, "float32", scaleShape);
  const zp = Tensor.fromValues(zps, p.int as DTypeName, scaleShape);
  const opts = p.axis === undefined ? {} : { axis: p.axis };
  let input: Tensor;
  let call: () => Tensor;
  if (p.op === "QuantizeLinear") {
    input = Tensor.fromStorage(Float32Array.from({ length: count }, () => Math.fround(((rng.u32() / 4294967296) - 0.5) * 6)), "float32", p.shape);
    call = () => quantizeLinear(input, scale, zp, opts);
  } else {
    const codes = p.int === "int8" ? Int8Array.from({ length: count }, () => Math.floor((rng.u32() / 4294967296) * 256) - 128) : Uint8Array.from({ length: count }, () => Math.floor((rng.u32() / 4294967296) * 256));
    input = Tensor.fromStorage(codes, p.int, p.shape);
    call = () => dequantizeLinear(input, scale, zp, opts);
  }
  const xType = p.op === "QuantizeLinear" ? FLOAT : ONNX[p.int];
  const yType = p.op === "QuantizeLinear" ? ONNX[p.int] : FLOAT;
  const model = buildModel({
    inputs: [{ name: "x", elemType: xType, shape: p.shape }, { name: "s", elemType: FLOAT, shape: scaleShape }, { name: "z", elemType: ONNX[p.int], shape: scaleShape }],
    outputs: [{ name: "y", elemType: yType, shape: p.shape }],
    nodes: [{ opType: p.op, inputs: ["x", "s", "z"], outputs: ["y"], attributes: p.axis === undefined ? [] : [{ name: "axis", type: "INT", i: p.axis }] }],
    opset: 21, irVersion: 10,
  });
  const session = await ort.InferenceSession.create(model, { graphOptimizationLevel: "disabled", intraOpNumThreads: 1, interOpNumThreads: 1 });
  const zpData = (zp.bytes().slice()) as Uint8Array;
  const ortRun = async (): Promise<ArrayBufferLike> => {
    const feeds = {
      x: new ort.Tensor(p.op === "QuantizeLinear" ? "float32" : p.int, input.data as never, p.shape),
      s: new ort.Tensor("float32", scales, scaleShape),
      z: new ort.Tensor(p.int, (p.int === "int8" ? new Int8Array(zpData.buffer) : zpData) as never, scaleShape),
    };
    const r = await session.run(feeds);
    return (r.y.data as Uint8Array).buffer;
  };
  // The results must agree before anything is timed (bytes; NaN cannot occur with these inputs).
  const ours = call().bytes();
  const theirs = new Uint8Array(await ortRun());
  const agree = ours.length === theirs.length && ours.every((b, i) => b === theirs[i]);
  const bytes = count * 4 + count;
  const src = new Uint8Array(bytes);
  const dst = new Uint8Array(bytes);
  const t = await time({
    tensorcast: () => call(),
    reference: () => {
      useQuantSimd(false);
      try {
        return call();
      } finally {
        useQuantSimd(true);
      }
    },
    ORT: ortRun,
    memcpy: () => dst.set(src.subarray(0, bytes >> 1)) as unknown,
  }, reps);
  await session.release();
  const rate = (ms: number): string => (count / ms / 1000).toFixed(0);
  const cell = (k: string): string => `${rate(t[k].median)} (${rate(t[k].min)})`;
  const ratio = (a: string, b: string): string => `${(t[b].median / t[a].median).toFixed(2)}x (${(t[b].min / t[a].min).toFixed(2)}x)`;
  return [p.name, cell("tensorcast"), cell("reference"), cell("ORT"), cell("memcpy"), ratio("tensorcast", "ORT"), `${t.tensorcast.faults} / ${t.ORT.faults}`, agree ? "equal" : "DIFFER"];
}

async function main(): Promise<void> {
  const rng = new Rng(42);
  console.log(`QuantizeLinear / DequantizeLinear, ${n} elements, ${reps} calls each; Node ${process.version}, onnxruntime-node ${ort.env.versions?.node ?? "?"}, ${cpus()[0]?.model ?? "?"}, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  console.log("M elements/s, median (best); ratio tensorcast / ORT by the median (by the best); faults per call median\n");
  const head = ["path", "tensorcast", "reference", "ORT", "memcpy", "tensorcast/ORT", "faults ours / ORT", "bytes vs ORT"];
  const rows: string[][] = [head, head.map(() => "---")];
  for (const p of PATHS) rows.push(await runPath(p, rng));
  for (const r of rows) console.log(`| ${r.join(" | ")} |`);
  console.log(`\nload after: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
}

await main();

/**
 * Cast throughput: tensorcast against onnxruntime-node and the memory-copy bound, in one run, on
 * the same inputs (issue 6). Not a test: it prints a table (and writes JSON with --json).
 *
 *   npx tsc -p tsconfig.test.json && node --expose-gc build/bench/cast.js [--json out.json]
 *       [--size N] [--string-size N] [--reps 3] [--calls 3] [--pause 200] [--warmup 1]
 *       [--only f32->f16,int64->int32] [--no-ort] [--runtimes node,/path/to/node24,/path/to/node26]
 *
 * Per pair, each contender runs one untimed warm-up call, then `reps` phases of `calls` timed calls
 * back to back, the contenders' phases alternating (A B C A B C ...), with a forced GC and a pause
 * before every phase: what one contender leaves behind (a 32 MiB cast() output) is collected and
 * unmapped while nobody is timed rather than during the next contender's call, and a change in the
 * machine's load hits every contender alike. The tables show the median and the best call as
 * elements per second, and the median minor page faults per call (process.resourceUsage(): every
 * thread of the process). The header records the Node and V8 versions, CPU model and core count,
 * and whether the WebAssembly kernels are the relaxed-SIMD build. --runtimes runs the whole bench
 * under each Node binary in turn, one set of tables each.
 * - "cast()": `cast(x, to, opts)`: a fresh output each call (allocation and its page faults included).
 * - "cast()+dispose": `cast(x, to, opts)` whose output is disposed after use (`using`), so its
 *   memory is reused by the next call (Node 22+; on Node 20 the same as cast()).
 * - "castInto": `castInto(x, out, opts)` into one output allocated before timing and reused by
 *   every repetition (no fresh pages to fault in). String pairs still build their strings.
 * - "castInto resident": `castInto(xa, outa, opts)` where the input (copied, untimed) and the
 *   output live in one arena (src/arena.ts): the kernels run in place, no chunk copies.
 * - "cast() resident": `arena.cast(xa, to, opts)`: a new output in the arena each call. Before each
 *   phase (untimed) the arena is reset and the input copied back in, so the arena holds the input
 *   and one phase's outputs; after the first phase its pages are already faulted in.
 * - "async 2T": `castIntoAsync(x, out, { threads: 2 })` from src/node: two threads (the caller and
 *   one worker) into one reused output on a SharedArrayBuffer; the input is an ordinary
 *   ArrayBuffer, so the worker's chunks are copied into shared staging buffers (timed).
 *   "async 2T shared-in": the same with the input on a SharedArrayBuffer (no staging copies).
 * - "async 2T resident": `castIntoAsync(xa, outa, { threads: 2 })` with the input (copied, untimed)
 *   and the output in one shared arena (`createArena(bytes, { shared: true })`): both threads run
 *   the kernels in place on the arena's shared memory, no staging and no chunk copies.
 * - "ORT": onnxruntime-node, one thread (intra-op and inter-op), graph optimisations off so helper
 *   nodes run as written. Timed: creating the input ort.Tensor, session.run, reading the output's
 *   data (the Node binding copies it into a JS typed array). Session creation is not timed. Where
 *   ORT's JS API cannot carry a type (the "ORT I/O" column says how):
 *   - bfloat16 travels as uint16 through a BitCast node inside the model;
 *   - a float8 source is a model initializer (no input hand-over at all; ORT has no JS float8);
 *   - float8 and uint4 outputs are read through a helper Cast to uint8. The helper is also timed
 *     alone (on an initializer holding the same intermediate tensor) and "ORT net" subtracts it.
 * - "memcpy": `Uint8Array.prototype.set` copying as many bytes as the cast reads plus writes, halved:
 *   a buffer of (in + out) / 2 bytes per element, so the copy reads and writes the same total as the
 *   cast. Its rate in elements per second is the memory-copy bound; "/ mem" is the fraction of it.
 */
import { writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import os from "node:os";
import { fileURLToPath } from "node:url";
import * as ort from "onnxruntime-node";
import { float16Feed } from "../test/support/ort.js";
import { dtype, type DType, type DTypeName, type Storage, type StorageOf } from "../src/dtype/table.js";
import { cast, castInto, type CastOptions } from "../src/ops/cast.js";
import { castIntoAsync, closeCastAsyncPool, sharedZeros } from "../src/node/cast-async.js";
import { u8View } from "../src/kernels/fast/views.js";
import { wasmRelaxed } from "../src/kernels/wasm/index.js";
import { Tensor } from "../src/tensor.js";
import { createArena } from "../src/arena.js";
import { encodeModel } from "../src/io/onnx/encode.js";
import { modelOf as graphOf, type NodeSpec } from "../test/support/onnx-model.js";
import { Rng } from "../test/support/rng.js";
import { float16Weights, inputFor, median } from "./inputs.js";

// ---------------------------------------------------------------------------------------------
// Command line

interface Args {
  json?: string;
  size: number;
  stringSize: number;
  /** Phases per contender (the contenders' phases alternate). */
  reps: number;
  /** Timed calls per phase. */
  calls: number;
  /** Milliseconds of pause (after a forced GC) before each phase. */
  pause: number;
  warmup: number;
  /** Node binaries to run this bench under, one after the other (one table each). */
  runtimes?: string[];
  only?: string[];
  ort: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { size: 4 * 1024 * 1024, stringSize: 1024 * 1024, reps: 3, calls: 3, pause: 200, warmup: 1, ort: true };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const next = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${k} needs a value`);
      return v;
    };
    const count = (): number => {
      const v = Number(next());
      if (!Number.isInteger(v) || v < 1) throw new Error(`${k} needs a positive integer`);
      return v;
    };
    switch (k) {
      case "--json": a.json = next(); break;
      case "--size": a.size = count(); break;
      case "--string-size": a.stringSize = count(); break;
      case "--reps": a.reps = count(); break;
      case "--calls": a.calls = count(); break;
      case "--pause": a.pause = Number(next()); break;
      case "--warmup": a.warmup = Number(next()); break;
      case "--runtimes": a.runtimes = next().split(","); break;
      case "--only": a.only = next().split(","); break;
      case "--no-ort": a.ort = false; break;
      case "--help": case "-h":
        console.log("node build/bench/cast.js [--json out.json] [--size N] [--string-size N] [--reps 3] [--calls 3] [--pause 200] [--warmup 1] [--only pair,pair] [--no-ort] [--runtimes node,/path/to/node24,...]");
        process.exit(0);
        break;
      default: throw new Error(`unknown argument ${k}`);
    }
  }
  return a;
}

// ---------------------------------------------------------------------------------------------
// The pairs

/** ONNX TensorProto.DataType numbers used by the models. */
const ONNX = { FLOAT: 1, UINT8: 2, INT8: 3, UINT16: 4, INT32: 6, INT64: 7, STRING: 8, FLOAT16: 10, DOUBLE: 11, BFLOAT16: 16, FLOAT8E4M3FN: 17, FLOAT8E5M2: 19, UINT4: 21 } as const;

interface OrtPlan {
  /** Model input element type and the ort.Tensor type the JS side hands over. */
  input: number;
  feedType: "float32" | "float16" | "float64" | "int64" | "uint16" | "string";
  /** Cast / BitCast nodes from "x" to "y": [op, to, extra attributes]. */
  nodes: [string, number, { saturate?: number }?][];
  output: number;
  /** Opset of the model: 26 where BitCast is used, else 25. */
  opset: number;
  note: string;
  /** "x" is not fed: it is an initializer holding the source tensor (a type ORT's JS API lacks). */
  initializer?: boolean;
  /** The last node is a helper reading an output type ORT's JS API lacks; timed alone on `from`. */
  helper?: { from: DTypeName };
}

interface Pair {
  name: string;
  from: DTypeName;
  to: DTypeName;
  opts: CastOptions;
  ort?: OrtPlan;
  noOrt?: string;
  /** The input drawn like a model's weights (bench/inputs.ts float16Weights) instead of uniformly. */
  weights?: boolean;
}

const direct = (input: number, feedType: OrtPlan["feedType"], to: number): OrtPlan => ({
  input, feedType, nodes: [["Cast", to]], output: to, opset: 25, note: "direct",
});

const PAIRS: Pair[] = [
  { name: "f32->f16", from: "float32", to: "float16", opts: {}, ort: direct(ONNX.FLOAT, "float32", ONNX.FLOAT16) },
  { name: "f16->f32", from: "float16", to: "float32", opts: {}, ort: direct(ONNX.FLOAT16, "float16", ONNX.FLOAT) },
  { name: "f16->f32 (weights)", from: "float16", to: "float32", opts: {}, ort: direct(ONNX.FLOAT16, "float16", ONNX.FLOAT), weights: true },
  {
    name: "f32->bf16", from: "float32", to: "bfloat16", opts: {},
    ort: { input: ONNX.FLOAT, feedType: "float32", nodes: [["Cast", ONNX.BFLOAT16], ["BitCast", ONNX.UINT16]], output: ONNX.UINT16, opset: 26, note: "out: BitCast bf16->uint16" },
  },
  {
    name: "bf16->f32", from: "bfloat16", to: "float32", opts: {},
    ort: { input: ONNX.UINT16, feedType: "uint16", nodes: [["BitCast", ONNX.BFLOAT16], ["Cast", ONNX.FLOAT]], output: ONNX.FLOAT, opset: 26, note: "in: BitCast uint16->bf16" },
  },
  {
    name: "f32->float8e4m3fn", from: "float32", to: "float8e4m3fn", opts: {},
    ort: { input: ONNX.FLOAT, feedType: "float32", nodes: [["Cast", ONNX.FLOAT8E4M3FN], ["Cast", ONNX.UINT8]], output: ONNX.UINT8, opset: 25, note: "out: helper Cast e4m3fn->uint8", helper: { from: "float8e4m3fn" } },
  },
  {
    name: "float8e4m3fn->f32", from: "float8e4m3fn", to: "float32", opts: {},
    ort: { input: ONNX.FLOAT8E4M3FN, feedType: "float32", nodes: [["Cast", ONNX.FLOAT]], output: ONNX.FLOAT, opset: 25, note: "in: e4m3fn initializer (no hand-over)", initializer: true },
  },
  {
    name: "f32->float8e5m2 (sat)", from: "float32", to: "float8e5m2", opts: { saturate: true },
    ort: { input: ONNX.FLOAT, feedType: "float32", nodes: [["Cast", ONNX.FLOAT8E5M2, { saturate: 1 }], ["Cast", ONNX.UINT8]], output: ONNX.UINT8, opset: 25, note: "out: helper Cast e5m2->uint8", helper: { from: "float8e5m2" } },
  },
  { name: "f32->int8", from: "float32", to: "int8", opts: {}, ort: direct(ONNX.FLOAT, "float32", ONNX.INT8) },
  { name: "int64->int32", from: "int64", to: "int32", opts: {}, ort: direct(ONNX.INT64, "int64", ONNX.INT32) },
  { name: "f64->f32", from: "float64", to: "float32", opts: {}, ort: direct(ONNX.DOUBLE, "float64", ONNX.FLOAT) },
  {
    name: "f32->uint4", from: "float32", to: "uint4", opts: {},
    ort: { input: ONNX.FLOAT, feedType: "float32", nodes: [["Cast", ONNX.UINT4], ["Cast", ONNX.UINT8]], output: ONNX.UINT8, opset: 25, note: "out: helper Cast uint4->uint8", helper: { from: "uint4" } },
  },
  { name: "f32->float4e2m1", from: "float32", to: "float4e2m1", opts: {}, noOrt: "no ORT CPU kernel" },
  { name: "f32->string", from: "float32", to: "string", opts: {}, ort: direct(ONNX.FLOAT, "float32", ONNX.STRING) },
  { name: "string->f32", from: "string", to: "float32", opts: {}, ort: direct(ONNX.STRING, "string", ONNX.FLOAT) },
];

// ---------------------------------------------------------------------------------------------
// Inputs (deterministic)

/** What ORT is handed for our input. */
function ortFeed(plan: OrtPlan, input: Storage, n: number): ort.Tensor {
  switch (plan.feedType) {
    case "float32": return new ort.Tensor("float32", input as Float32Array, [n]);
    case "float16": return float16Feed(input as Uint16Array, [n]);
    case "uint16": return new ort.Tensor("uint16", input as Uint16Array, [n]);
    case "float64": return new ort.Tensor("float64", input as Float64Array, [n]);
    case "int64": return new ort.Tensor("int64", input as BigInt64Array, [n]);
    case "string": return new ort.Tensor("string", input as string[], [n]);
  }
}

type Step = OrtPlan["nodes"][number];

/** A model running `steps` from "x" to "y"; "x" is an input, or an initializer holding `constant`. */
function modelOf(input: number, steps: Step[], output: number, opset: number, constant?: Tensor): Uint8Array {
  const nodes: NodeSpec[] = steps.map(([op, to, extra], i) => ({
    opType: op,
    inputs: [i === 0 ? "x" : `t${i - 1}`],
    outputs: [i === steps.length - 1 ? "y" : `t${i}`],
    attributes: [
      { name: "to", type: "INT", i: to },
      ...(extra?.saturate !== undefined ? [{ name: "saturate", type: "INT" as const, i: extra.saturate }] : []),
    ],
  }));
  const model = graphOf({
    inputs: constant ? [] : [{ name: "x", elemType: input, shape: ["n"] }],
    outputs: [{ name: "y", elemType: output, shape: constant ? [constant.size] : ["n"] }],
    nodes,
    opset,
    irVersion: opset >= 26 ? 11 : 10,
    graphName: "bench",
  });
  if (constant) model.graph.initializers.push({ name: "x", tensor: constant });
  return encodeModel(model, { producerName: "tensorcast-bench" });
}

// ---------------------------------------------------------------------------------------------
// Timing

const gc = (globalThis as { gc?: () => void }).gc;

interface Timing {
  /** Median wall-clock milliseconds. */
  wall: number;
  /** Fastest wall-clock milliseconds. */
  wallMin: number;
  /** Median process CPU milliseconds (every thread: ORT's run is on a libuv worker thread). */
  cpu: number;
  /** Median minor page faults per call (process.resourceUsage().minorPageFault; every thread). */
  faults: number;
}

interface Contender {
  name: string;
  run: () => unknown;
  /** Untimed, before the warm-up and before every phase (after the GC). */
  setup?: () => void;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Each contender runs in phases of `perPhase` timed calls, the contenders' phases alternating
 * (A B C A B C ...) `rounds` times, after one untimed warm-up phase each. Before every phase a
 * forced GC and a pause: the previous phase's garbage (a large cast() output, say) is collected and
 * its memory returned while nobody is timed, instead of during the next contender's first call.
 * Within a phase the calls run back to back, as an application would make them.
 */
async function timePhases(contenders: Contender[], rounds: number, perPhase: number, warmup: number, pauseMs: number): Promise<Record<string, Timing>> {
  for (let i = 0; i < warmup; i++) for (const c of contenders) { c.setup?.(); await c.run(); }
  const wall = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  const cpu = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  const faults = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (const c of contenders) {
      gc?.();
      c.setup?.();
      await pause(pauseMs);
      for (let i = 0; i < perPhase; i++) {
        const f0 = process.resourceUsage().minorPageFault;
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        await c.run();
        wall.get(c.name)!.push(performance.now() - t0);
        const used = process.cpuUsage(c0);
        cpu.get(c.name)!.push((used.user + used.system) / 1e3);
        faults.get(c.name)!.push(process.resourceUsage().minorPageFault - f0);
      }
    }
  }
  return Object.fromEntries(contenders.map((c) => [c.name, {
    wall: median(wall.get(c.name)!), wallMin: Math.min(...wall.get(c.name)!), cpu: median(cpu.get(c.name)!), faults: median(faults.get(c.name)!),
  }]));
}

/** Bytes one element occupies (0 for strings: no fixed width). */
function bytesPerElement(t: DType): number {
  return t.kind === "string" ? 0 : t.bits / 8;
}

/** Million elements per second: median by wall clock, best by wall clock, median by process CPU time. */
interface Rate {
  wall: number;
  best: number;
  cpu: number;
}

interface Row {
  pair: string;
  elements: number;
  cast: Rate;
  castDispose: Rate;
  into: Rate;
  resident?: Rate;
  castResident?: Rate;
  async?: Rate;
  asyncShared?: Rate;
  asyncResident?: Rate;
  ort?: Rate;
  /** ORT with the time of an output helper subtracted (pairs that have one). */
  ortNet?: Rate;
  mem?: Rate;
  /** tensorcast / ORT and tensorcast / memory bound, from the same clock. */
  castVsOrt?: Rate;
  castDisposeVsOrt?: Rate;
  intoVsOrt?: Rate;
  intoVsOrtNet?: Rate;
  residentVsOrt?: Rate;
  residentVsOrtNet?: Rate;
  castResidentVsOrt?: Rate;
  residentVsMem?: Rate;
  castVsMem?: Rate;
  intoVsMem?: Rate;
  asyncVsMem?: Rate;
  asyncSharedVsMem?: Rate;
  asyncResidentVsMem?: Rate;
  ortIO: string;
  /** Whether castInto and castIntoAsync gave the bytes of cast(). */
  matches: boolean;
  /** Median minor page faults per call, by contender. */
  faults: Record<string, number>;
}

async function runPair(p: Pair, args: Args, rng: Rng): Promise<Row> {
  const from = dtype(p.from);
  const to = dtype(p.to);
  const strings = from.kind === "string" || to.kind === "string";
  const n = strings ? args.stringSize : args.size;
  const input = p.weights ? float16Weights(n, rng) : inputFor(p.from, n, rng);
  const x = Tensor.fromStorage(input as StorageOf<DTypeName>, from, [n]);
  const rate = (t: Timing): Rate => ({ wall: n / t.wall / 1e3, best: n / t.wallMin / 1e3, cpu: n / t.cpu / 1e3 });
  const log = (s: string): void => void process.stderr.write(s);
  const show = (name: string, r: Rate): void => log(` ${name} ${fmt(r.wall)} (cpu ${fmt(r.cpu)})`);
  log(`${p.name.padEnd(22)} n=${n}:`);

  let sink = 0;
  // Contenders run interleaved (one repetition of each in turn), so a change in the machine's load
  // during the run hits them alike and the ratios stay comparable.
  const contenders: Contender[] = [];
  const add = (name: string, run: () => unknown): void => void contenders.push({ name, run });
  add("cast", () => { sink ^= cast(x, to, p.opts).size; });
  // The output released when done with, as `using y = cast(...)` does: its memory serves the next call.
  add("castDispose", () => { const y = cast(x, to, p.opts); sink ^= y.data.length; y.dispose(); });
  const out = Tensor.zeros(to, [n]);
  add("castInto", () => { sink ^= castInto(x, out, p.opts).size; });
  let shared: Tensor | undefined;
  let resident: Tensor | undefined;
  let lastResident: Tensor | undefined;
  let sharedResident: Tensor | undefined;
  if (!strings) {
    const inBytes = x.bytes().length;
    const outBytes = out.bytes().length + 64; // with the alignment padding
    const arena = createArena(inBytes + outBytes + 64);
    const xa = arena.from(x);
    const outa = arena.zeros(to, [n]);
    resident = outa;
    add("resident", () => { sink ^= castInto(xa, outa, p.opts).size; });
    // Room for the input and one phase's outputs: the arena is reset before each phase.
    const phase = createArena(inBytes + Math.max(args.calls, 1) * outBytes + 64);
    let xr = xa;
    const castResident: Contender = {
      name: "castResident",
      setup: () => { phase.reset(); xr = phase.from(x); },
      run: () => { lastResident = phase.cast(xr, to, p.opts); sink ^= lastResident.size; },
    };
    contenders.push(castResident);
    const target = sharedZeros(to, [n]);
    shared = target; // read back after timing: its bytes are checked against cast()'s
    const options = { ...p.opts, threads: 2 };
    add("async", async () => { sink ^= (await castIntoAsync(x, target, options)).size; });
    // The same with the input already in shared memory (workers read it where it is, no staging).
    const xs = sharedZeros(from, [n]);
    u8View(xs.data).set(u8View(input));
    add("asyncShared", async () => { sink ^= (await castIntoAsync(xs, target, options)).size; });
    // Both in one shared arena: each thread converts in place on the arena's memory.
    const sharedArena = createArena(inBytes + outBytes + 64, { shared: true });
    const xsa = sharedArena.from(x);
    const outsa = sharedArena.zeros(to, [n]);
    sharedResident = outsa;
    add("asyncResident", async () => { sink ^= (await castIntoAsync(xsa, outsa, options)).size; });
    const bytes = Math.ceil(((bytesPerElement(from) + bytesPerElement(to)) / 2) * n);
    const a = new Uint8Array(bytes).fill(0x5a);
    const b = new Uint8Array(bytes);
    add("mem", () => b.set(a));
  }
  const sessions: ort.InferenceSession[] = [];
  const plan = args.ort ? p.ort : undefined;
  if (plan) {
    const options: ort.InferenceSession.SessionOptions = {
      intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: "sequential", graphOptimizationLevel: "disabled",
    };
    const addModel = async (name: string, model: Uint8Array, feed: ort.Tensor | undefined): Promise<void> => {
      const session = await ort.InferenceSession.create(model, options);
      sessions.push(session);
      add(name, async () => {
        const feeds: Record<string, ort.Tensor> = {};
        if (feed) feeds.x = feed.type === "float16" ? float16Feed(feed.data as Uint16Array, [n]) : new ort.Tensor(feed.type, feed.data as never, [n]);
        const result = await session.run(feeds);
        sink ^= (result.y.data as ArrayLike<unknown>).length;
      });
    };
    if (plan.initializer) await addModel("ort", modelOf(plan.input, plan.nodes, plan.output, plan.opset, x), undefined);
    else await addModel("ort", modelOf(plan.input, plan.nodes, plan.output, plan.opset), ortFeed(plan, input, n));
    if (plan.helper) {
      // The helper alone, on the intermediate tensor ORT's first node makes (computed here, not timed).
      const h = dtype(plan.helper.from);
      await addModel("helper", modelOf(h.onnx, plan.nodes.slice(-1), plan.output, plan.opset, cast(x, h, p.opts)), undefined);
    }
  }
  const timings = await timePhases(contenders, args.reps, args.calls, args.warmup, args.pause);
  for (const s of sessions) await s.release();

  const castRate = rate(timings.cast);
  show("cast", castRate);
  const castDisposeRate = rate(timings.castDispose);
  show("cast+dispose", castDisposeRate);
  const intoRate = rate(timings.castInto);
  show("castInto", intoRate);
  const want = cast(x, to, p.opts).data;
  let matches = equalStorage(out.data, want);
  const residentRate = timings.resident && rate(timings.resident);
  if (residentRate) show("castInto resident", residentRate);
  const castResidentRate = timings.castResident && rate(timings.castResident);
  if (castResidentRate) show("cast() resident", castResidentRate);
  if (resident) matches &&= equalStorage(resident.data, want);
  if (lastResident) matches &&= equalStorage(lastResident.data, want);
  const asyncRate = timings.async && rate(timings.async);
  if (asyncRate) show("async", asyncRate);
  const asyncSharedRate = timings.asyncShared && rate(timings.asyncShared);
  if (asyncSharedRate) show("async-shared-in", asyncSharedRate);
  if (shared) matches &&= equalStorage(shared.data, want);
  const asyncResidentRate = timings.asyncResident && rate(timings.asyncResident);
  if (asyncResidentRate) show("async-resident", asyncResidentRate);
  if (sharedResident) matches &&= equalStorage(sharedResident.data, want);
  if (!matches) log(" (MISMATCH)");
  const memRate = timings.mem && rate(timings.mem);
  if (memRate) show("mem", memRate);
  const ortRate = timings.ort && rate(timings.ort);
  if (ortRate) show("ort", ortRate);
  let ortNet: Rate | undefined;
  if (timings.ort && timings.helper) {
    const whole = timings.ort;
    const helper = timings.helper;
    ortNet = rate({
      wall: Math.max(whole.wall - helper.wall, 1e-9), wallMin: Math.max(whole.wallMin - helper.wallMin, 1e-9),
      cpu: Math.max(whole.cpu - helper.cpu, 1e-9), faults: whole.faults,
    });
    show("ort-net", ortNet);
  }
  log("\n");
  if (sink === 0.5) console.log(sink); // keep the results alive

  const div = (a: Rate | undefined, b: Rate | undefined): Rate | undefined =>
    a && b ? { wall: a.wall / b.wall, best: a.best / b.best, cpu: a.cpu / b.cpu } : undefined;
  return {
    pair: p.name, elements: n, cast: castRate, castDispose: castDisposeRate, into: intoRate, resident: residentRate, castResident: castResidentRate, async: asyncRate, asyncShared: asyncSharedRate, asyncResident: asyncResidentRate, ort: ortRate, ortNet, mem: memRate,
    castVsOrt: div(castRate, ortRate), castDisposeVsOrt: div(castDisposeRate, ortRate), intoVsOrt: div(intoRate, ortRate), intoVsOrtNet: div(intoRate, ortNet),
    residentVsOrt: div(residentRate, ortRate), residentVsOrtNet: div(residentRate, ortNet), castResidentVsOrt: div(castResidentRate, ortRate),
    residentVsMem: div(residentRate, memRate),
    castVsMem: div(castRate, memRate), intoVsMem: div(intoRate, memRate), asyncVsMem: div(asyncRate, memRate),
    asyncSharedVsMem: div(asyncSharedRate, memRate), asyncResidentVsMem: div(asyncResidentRate, memRate),
    ortIO: p.ort ? (args.ort ? p.ort.note : "not run (--no-ort)") : p.noOrt ?? "",
    matches,
    faults: Object.fromEntries(Object.entries(timings).map(([k, t]) => [k, t.faults])),
  };
}

function equalStorage(a: Storage, b: Storage): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    const x = a as string[];
    const y = b as string[];
    return x.length === y.length && x.every((v, i) => v === y[i]);
  }
  const u = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const v = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  if (u.length !== v.length) return false;
  for (let i = 0; i < u.length; i++) if (u[i] !== v[i]) return false;
  return true;
}

function fmt(v: number | undefined, digits = 1): string {
  if (v === undefined) return "–";
  return v >= 100 ? v.toFixed(0) : v.toFixed(digits);
}

function ratio(v: number | undefined): string {
  return v === undefined ? "–" : `${v >= 10 ? v.toFixed(0) : v.toFixed(2)}x`;
}

function pct(v: number | undefined): string {
  return v === undefined ? "–" : `${(100 * v).toFixed(v < 0.1 ? 1 : 0)}%`;
}

/** Median minor page faults per call of each contender. */
function faultTable(rows: Row[]): string {
  const names = ["cast", "castDispose", "castInto", "resident", "castResident", "async", "asyncShared", "asyncResident", "ort", "mem"];
  const head = ["pair", ...names.map((c) => `${c} faults/call`)];
  const body = rows.map((r) => [r.pair, ...names.map((c) => (r.faults[c] === undefined ? "–" : String(r.faults[c])))]);
  return [head, head.map(() => "---"), ...body].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

/** The table, by median wall clock ("wall"), best wall clock ("best") or median process CPU time ("cpu"). */
function table(rows: Row[], clock: keyof Rate): string {
  const head = [
    "pair", "n", "cast() M/s", "cast()+dispose M/s", "castInto M/s", "castInto resident M/s", "cast() resident M/s", "async 2T M/s", "async 2T shared-in M/s", "async 2T resident M/s", "ORT M/s", "ORT net M/s", "memcpy M/s",
    "cast/ORT", "cast+dispose/ORT", "castInto/ORT", "castInto/ORT net", "castInto resident/ORT", "castInto resident/ORT net", "cast() resident/ORT", "cast/mem", "castInto/mem", "async 2T/mem", "shared-in/mem", "async 2T resident/mem", "ORT I/O",
  ];
  const body = rows.map((r) => [
    r.pair + (r.matches ? "" : " (MISMATCH)"),
    r.elements >= 1 << 20 && r.elements % (1 << 20) === 0 ? `${r.elements / (1 << 20)}Mi` : String(r.elements),
    fmt(r.cast[clock]), fmt(r.castDispose[clock]), fmt(r.into[clock]), fmt(r.resident?.[clock]), fmt(r.castResident?.[clock]), fmt(r.async?.[clock]), fmt(r.asyncShared?.[clock]), fmt(r.asyncResident?.[clock]), fmt(r.ort?.[clock]), fmt(r.ortNet?.[clock]), fmt(r.mem?.[clock]),
    ratio(r.castVsOrt?.[clock]), ratio(r.castDisposeVsOrt?.[clock]), ratio(r.intoVsOrt?.[clock]), ratio(r.intoVsOrtNet?.[clock]),
    ratio(r.residentVsOrt?.[clock]), ratio(r.residentVsOrtNet?.[clock]), ratio(r.castResidentVsOrt?.[clock]),
    pct(r.castVsMem?.[clock]), pct(r.intoVsMem?.[clock]), pct(r.asyncVsMem?.[clock]), pct(r.asyncSharedVsMem?.[clock]), pct(r.asyncResidentVsMem?.[clock]),
    r.ortIO,
  ]);
  return [head, head.map(() => "---"), ...body].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

function machine(): Record<string, string | number> {
  const cpus = os.cpus();
  return {
    node: process.version,
    v8: process.versions.v8,
    onnxruntime: ort.env.versions?.node ?? "unknown",
    platform: `${os.platform()} ${os.arch()}`,
    cpus: cpus.length,
    cpu: cpus[0]?.model ?? "unknown",
    loadavg: os.loadavg().map((l) => l.toFixed(2)).join(" "),
    float16array: typeof (globalThis as Record<string, unknown>).Float16Array === "function" ? "yes" : "no",
    relaxedSimd: wasmRelaxed() ? "yes" : "no",
  };
}

/**
 * --runtimes: this bench again under each Node binary in turn (same arguments; with --json, one
 * file per runtime, suffixed with its index), each printing its own table.
 */
function runEach(runtimes: string[], argv: string[]): void {
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--runtimes") i++;
    else rest.push(argv[i]!);
  }
  const script = fileURLToPath(import.meta.url);
  runtimes.forEach((node, k) => {
    const own = rest.map((a, i) => (rest[i - 1] === "--json" ? a.replace(/(\.json)?$/, `.${k}$1`) : a));
    console.log(`\n## ${node}\n`);
    const r = spawnSync(node, ["--expose-gc", script, ...own], { stdio: "inherit" });
    if (r.status !== 0) process.exitCode = 1;
  });
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const args = parseArgs(argv);
  if (args.runtimes) return runEach(args.runtimes, argv);
  const pairs = args.only ? PAIRS.filter((p) => args.only!.includes(p.name)) : PAIRS;
  if (pairs.length === 0) throw new Error(`--only matched no pair; pairs are ${PAIRS.map((p) => p.name).join(", ")}`);
  const started = machine();
  const rows: Row[] = [];
  for (const p of pairs) rows.push(await runPair(p, args, new Rng(0x5eedbe9c)));
  await closeCastAsyncPool();
  const m = machine();
  const header =
    `tensorcast cast bench: Node ${m.node} (V8 ${m.v8}), onnxruntime-node ${m.onnxruntime}, ${m.cpus} x ${m.cpu}, ` +
    `Float16Array: ${m.float16array}, WebAssembly relaxed SIMD: ${m.relaxedSimd}; ` +
    `${args.reps} alternating phases of ${args.calls} calls per contender (GC and ${args.pause} ms pause before each) after ${args.warmup} warm-up; ` +
    `load average ${started.loadavg} -> ${m.loadavg}`;
  console.log(header);
  console.log("\nWall clock, median (elements per second, million):\n");
  console.log(table(rows, "wall"));
  console.log(`\nWall clock, best of ${args.reps * args.calls}:\n`);
  console.log(table(rows, "best"));
  console.log("\nMinor page faults per call (median):\n");
  console.log(faultTable(rows));
  console.log("\nProcess CPU time (every thread; steadier when other processes share the cores):\n");
  console.log(table(rows, "cpu"));
  if (args.json) {
    writeFileSync(args.json, JSON.stringify({ machine: { ...m, loadavgStart: started.loadavg }, args, rows }, null, 2) + "\n");
    console.log(`wrote ${args.json}`);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});

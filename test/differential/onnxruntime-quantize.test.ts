/**
 * Differential test: our quantizeLinear / dequantizeLinear against onnxruntime-node 1.30 (CPU),
 * QuantizeLinear and DequantizeLinear at opsets 21 and 25, float32 and float16 inputs, every
 * output type ORT implements (int8, uint8, int16, uint16, int4, uint4, the four float8s),
 * per-tensor, per-axis and blocked scales, saturate 1 and 0. Inputs: edges (+/-0, +/-Inf, NaN,
 * ties, range ends, overflow) and seeded random values.
 *
 * Every mismatch must be explained by exactly one named difference below (docs/semantics.md,
 * "Quantization": where onnxruntime differs), with ORT giving what that entry predicts; anything
 * else fails. Types ORT's JS binding cannot carry (int4, float8) travel through exact helper Casts
 * inside the model, so those outputs are compared by value.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as ort from "onnxruntime-node";
import { float16Feed, ortData } from "../support/ort.js";
import { Tensor, dequantizeLinear, dtype, quantizeLinear, type DType, type DTypeName } from "../../src/index.js";
import { buildModel, type Attribute, type NodeSpec } from "../support/onnx-model.js";
import { Rng } from "../support/rng.js";

const SESSION_OPTIONS: ort.InferenceSession.SessionOptions = { graphOptimizationLevel: "disabled", enableCpuMemArena: false };
const FLOAT = 1;
const FLOAT16 = 10;

type Granularity = "tensor" | "axis" | "block";
interface Config {
  readonly opset: number;
  readonly x: "float32" | "float16";
  readonly out: DTypeName;
  readonly granularity: Granularity;
  readonly saturate: boolean;
}

const OUTS: DTypeName[] = ["int8", "uint8", "int16", "uint16", "int4", "uint4", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"];
const ROWS = 64;
const COLS = 64; // x is [ROWS, COLS]; axis 1; blocks of 16 (and a partial one: 64 = 3 * 20 + 4 with block 20)

/** One named difference: does it explain this element, given ours, ORT's, and what ORT would give under it? */
interface Difference {
  readonly name: string;
  readonly explains: (c: Config, x: number, ours: number, theirs: number, f32Division: number) => boolean;
}

const isNaN_ = Number.isNaN;
const DIFFERENCES: readonly Difference[] = [
  {
    name: "+Inf and positive overflow give the integer minimum (float16 x into every integer type; float32 x into int4 / uint4 per axis)",
    explains: (c, x, ours, theirs) => {
      const t = dtype(c.out);
      return (t.kind === "int" || t.kind === "uint") && ours === t.max && theirs === t.min && x > 0;
    },
  },
  {
    name: "NaN, -Inf and negative overflow give the maximum (float16 x into int8 / int16 / int4; float32 x into int4 per axis)",
    explains: (c, x, ours, theirs) => {
      const t = dtype(c.out);
      return t.kind === "int" && ours === t.min && theirs === t.max && !(x > 0);
    },
  },
  {
    name: "-0 into a float8 with the zero point +0: -0 (the zero point is ignored; we add it as the formula says: +0)",
    explains: (c, x, ours, theirs) => dtype(c.out).kind === "float" && x === 0 && Object.is(ours, 0) && Object.is(theirs, -0),
  },
  {
    name: "blocked float8 ignores saturate=0 (gives +/-max where Cast's table says NaN or Inf)",
    explains: (c, _x, ours, theirs) =>
      c.granularity === "block" && !c.saturate && dtype(c.out).kind === "float" && (isNaN_(ours) || !Number.isFinite(ours)) && Math.abs(theirs) === dtype(c.out).max,
  },
  {
    name: "float8e4m3fn, saturate=0, quotients in [480, 496): +/-448 (Cast's difference; we give NaN)",
    explains: (c, _x, ours, theirs) => c.granularity !== "block" && !c.saturate && c.out === "float8e4m3fn" && isNaN_(ours) && Math.abs(theirs) === 448,
  },
  {
    name: "float8e5m2, saturate=0, overflow: NaN (the spec's table and we: +/-Inf)",
    explains: (c, _x, ours, theirs) => !c.saturate && c.out === "float8e5m2" && !Number.isFinite(ours) && !isNaN_(ours) && isNaN_(theirs),
  },
  {
    name: "float16 x / float16 scale divided in float32 (we divide in float16, the scale's type)",
    explains: (c, _x, ours, theirs, f32Division) => c.x === "float16" && Object.is(theirs, f32Division) && !Object.is(ours, theirs),
  },
];

function inputsFor(c: Config, rng: Rng): { x: Tensor; scale: Tensor; zeroPoint: Tensor; scaleShape: number[]; blockSize?: number } {
  const out = dtype(c.out);
  const blockSize = c.granularity === "block" ? (rng.below(2) === 0 ? 16 : 20) : undefined;
  const scaleShape = c.granularity === "tensor" ? [] : c.granularity === "axis" ? [COLS] : [ROWS, Math.ceil(COLS / blockSize!)];
  const scaleCount = scaleShape.reduce((p, d) => p * d, 1);
  const scales = Array.from({ length: scaleCount }, () => [1, 2, 0.5, 0.1, 3, 1 / 3, 0.01, 10][rng.below(8)] * (1 + rng.below(100) / 128));
  const integer = out.kind !== "float";
  const zps = Array.from({ length: scaleCount }, () => (integer ? Number(out.min) + rng.below(Number(out.max) - Number(out.min) + 1) : 0));
  const xs: number[] = [];
  const edges = [0, -0, Infinity, -Infinity, NaN, 0.5, -0.5, 1.5, 2.5, -2.5, 127.5, -128.5, 1e9, -1e9, 448, 464, 480, 57344, 61440, 65504, 7.5, -8.5];
  for (let i = 0; i < ROWS * COLS; i++) {
    const r = rng.below(4);
    xs.push(r === 0 ? edges[rng.below(edges.length)] : r === 1 ? (rng.below(600) - 300 + 0.5) : (rng.u32() / 2 ** 32 - 0.5) * 2 ** rng.below(20));
  }
  const x = Tensor.fromValues(xs, c.x, [ROWS, COLS]);
  const scale = Tensor.fromValues(scales, c.x, scaleShape);
  return { x, scale, zeroPoint: Tensor.fromValues(zps, c.out, scaleShape), scaleShape, blockSize };
}

function feed(t: Tensor): ort.Tensor {
  if (t.dtype.name === "float16") return float16Feed(t.data as Uint16Array, t.shape);
  return new ort.Tensor(t.dtype.name as "float32", t.data as Float32Array, t.shape);
}

async function ortQuantize(c: Config, x: Tensor, scale: Tensor, zeroPoint: Tensor, blockSize?: number): Promise<Float32Array> {
  const out = dtype(c.out);
  const xType = c.x === "float32" ? FLOAT : FLOAT16;
  const attributes: Attribute[] = [{ name: "axis", type: "INT", i: 1 }];
  if (blockSize) attributes.push({ name: "block_size", type: "INT", i: blockSize });
  if (out.kind === "float") attributes.push({ name: "saturate", type: "INT", i: c.saturate ? 1 : 0 });
  const nodes: NodeSpec[] = [
    { opType: "Cast", inputs: ["z32"], outputs: ["z"], attributes: [{ name: "to", type: "INT", i: out.onnx }] },
    { opType: "QuantizeLinear", inputs: ["x", "s", "z"], outputs: ["q"], attributes },
    { opType: "Cast", inputs: ["q"], outputs: ["y"], attributes: [{ name: "to", type: "INT", i: FLOAT }] },
  ];
  const model = buildModel({
    inputs: [
      { name: "x", elemType: xType, shape: x.shape }, { name: "s", elemType: xType, shape: scale.shape },
      { name: "z32", elemType: FLOAT, shape: zeroPoint.shape },
    ],
    outputs: [{ name: "y", elemType: FLOAT, shape: x.shape }],
    nodes, opset: c.opset, irVersion: 11,
  });
  const session = await ort.InferenceSession.create(model, SESSION_OPTIONS);
  const zp32 = new Float32Array(zeroPoint.toValues() as number[]);
  const r = await session.run({ x: feed(x), s: feed(scale), z32: new ort.Tensor("float32", zp32, zeroPoint.shape) });
  await session.release();
  return ortData(r.y) as Float32Array;
}

const CONFIGS: Config[] = [];
for (const opset of [21, 25]) {
  for (const x of ["float32", "float16"] as const) {
    for (const out of OUTS) {
      for (const granularity of ["tensor", "axis", "block"] as Granularity[]) {
        for (const saturate of dtype(out).kind === "float" ? [true, false] : [true]) CONFIGS.push({ opset, x, out, granularity, saturate });
      }
    }
  }
}

test(`QuantizeLinear against onnxruntime: ${CONFIGS.length} configurations, every mismatch a named difference`, async (t) => {
  const counts = new Map<string, number>();
  const unexplained: string[] = [];
  let elements = 0;
  let seed = 1;
  for (const c of CONFIGS) {
    const rng = new Rng(seed++);
    const { x, scale, zeroPoint, blockSize } = inputsFor(c, rng);
    let theirs: Float32Array;
    try {
      theirs = await ortQuantize(c, x, scale, zeroPoint, blockSize);
    } catch (e) {
      counts.set(`not run by onnxruntime: ${(e as Error).message.split("\n")[0].slice(0, 120)}`, 1);
      continue;
    }
    const opts = { opset: c.opset, axis: 1, ...(blockSize && { blockSize }), ...(dtype(c.out).kind === "float" && { saturate: c.saturate }) };
    const ours = quantizeLinear(x, scale, zeroPoint, opts).toValues() as number[];
    const f32Division = c.x === "float16" ? quantizeLinear(x, scale, zeroPoint, { ...opts, opset: 25, precision: "float32" }).toValues() as number[] : [];
    const xv = x.toValues() as number[];
    elements += ours.length;
    for (let i = 0; i < ours.length; i++) {
      const a = ours[i];
      const b = theirs[i];
      if (Object.is(a, b) || (isNaN_(a) && isNaN_(b))) continue;
      const d = DIFFERENCES.filter((diff) => diff.explains(c, xv[i], a, b, f32Division[i]));
      if (d.length === 1) counts.set(d[0].name, (counts.get(d[0].name) ?? 0) + 1);
      else if (unexplained.filter((u) => u.startsWith(JSON.stringify(c))).length < 2) unexplained.push(`${JSON.stringify(c)} element ${i}: x ${xv[i]}: ours ${a}, onnxruntime ${b}${d.length > 1 ? ` (${d.length} differences match)` : ""}`);
    }
  }
  for (const [name, n] of counts) t.diagnostic(`${n} elements: ${name}`);
  t.diagnostic(`${elements} elements compared`);
  assert.deepEqual(unexplained, []);
});

const DQ_INPUTS: DTypeName[] = ["int8", "uint8", "int16", "uint16", "int32", "int4", "uint4", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"];

/** Every code (8 bits or fewer) or edge and random values (16 and 32 bits) of an input type, as values. */
function dqValues(t: DType, rng: Rng, n: number): number[] {
  const out: number[] = [];
  if (t.kind === "float") {
    for (let i = 0; i < n; i++) out.push(Tensor.fromBytes(new Uint8Array([i % 256]), t.name, [1]).toValues()[0] as number);
    return out;
  }
  const min = Number(t.min);
  const span = Number(t.max) - min + 1;
  for (let i = 0; i < n; i++) out.push(i < 4 ? [min, Number(t.max), 0, -1][i] : min + (rng.u32() % span));
  return out.map((v) => (t.kind === "uint" && v < 0 ? 0 : v));
}

test(`DequantizeLinear against onnxruntime: ${DQ_INPUTS.length} input types x float32 / float16 scales x 3 granularities, bit for bit`, async (t) => {
  const mismatches: string[] = [];
  let elements = 0;
  let int32Rounding = 0;
  let seed = 1000;
  for (const opset of [21, 25]) for (const input of DQ_INPUTS) for (const scaleType of ["float32", "float16"] as const) for (const granularity of ["tensor", "axis", "block"] as Granularity[]) {
    const rng = new Rng(seed++);
    const type = dtype(input);
    const blockSize = granularity === "block" ? 20 : undefined;
    const scaleShape = granularity === "tensor" ? [] : granularity === "axis" ? [COLS] : [ROWS, Math.ceil(COLS / 20)];
    const scaleCount = scaleShape.reduce((p, d) => p * d, 1);
    const scale = Tensor.fromValues(Array.from({ length: scaleCount }, () => [1, 0.5, 0.1, 3, 1 / 3, 1e-3, 300][rng.below(7)]), scaleType, scaleShape);
    const xs = dqValues(type, rng, ROWS * COLS);
    const zps = type.kind === "float" || input === "int32" ? Array(scaleCount).fill(0) : dqValues(type, rng, scaleCount);
    const x = Tensor.fromValues(xs, input, [ROWS, COLS]);
    const zeroPoint = Tensor.fromValues(zps, input, scaleShape);
    const direct = ["int8", "uint8", "int16", "uint16", "int32"].includes(input);
    const nodes: NodeSpec[] = [];
    if (!direct) {
      // saturate=0 keeps e5m2's infinities (fed as float32 +/-Inf); every other value is exact.
      const keep: Attribute[] = type.kind === "float" ? [{ name: "saturate", type: "INT", i: 0 }] : [];
      nodes.push({ opType: "Cast", inputs: ["x32"], outputs: ["x"], attributes: [{ name: "to", type: "INT", i: type.onnx }, ...keep] });
      nodes.push({ opType: "Cast", inputs: ["z32"], outputs: ["z"], attributes: [{ name: "to", type: "INT", i: type.onnx }] });
    }
    const attributes: Attribute[] = [{ name: "axis", type: "INT", i: 1 }];
    if (blockSize) attributes.push({ name: "block_size", type: "INT", i: blockSize });
    nodes.push({ opType: "DequantizeLinear", inputs: ["x", "s", "z"], outputs: ["y"], attributes });
    const sType = scaleType === "float32" ? FLOAT : FLOAT16;
    const model = buildModel({
      inputs: [
        { name: direct ? "x" : "x32", elemType: direct ? type.onnx : FLOAT, shape: x.shape }, { name: "s", elemType: sType, shape: scaleShape },
        { name: direct ? "z" : "z32", elemType: direct ? type.onnx : FLOAT, shape: scaleShape },
      ],
      outputs: [{ name: "y", elemType: sType, shape: x.shape }],
      nodes, opset, irVersion: 11,
    });
    const session = await ort.InferenceSession.create(model, SESSION_OPTIONS);
    const feeds: Record<string, ort.Tensor> = { s: feed(scale) };
    if (direct) {
      feeds.x = new ort.Tensor(input as "int8", x.data as Int8Array, x.shape);
      feeds.z = new ort.Tensor(input as "int8", zeroPoint.data as Int8Array, scaleShape);
    } else {
      feeds.x32 = new ort.Tensor("float32", new Float32Array(xs), x.shape);
      feeds.z32 = new ort.Tensor("float32", new Float32Array(zps), scaleShape);
    }
    const r = await session.run(feeds);
    await session.release();
    const theirs = Tensor.fromStorage(ortData(r.y) as Float32Array, scaleType, x.shape).toValues() as number[];
    const scaleValues = scale.toValues() as number[];
    const ours = dequantizeLinear(x, scale, zeroPoint, { opset, axis: 1, ...(blockSize && { blockSize }) }).toValues() as number[];
    elements += ours.length;
    for (let i = 0; i < ours.length; i++) {
      if (Object.is(ours[i], theirs[i]) || (isNaN_(ours[i]) && isNaN_(theirs[i]))) continue;
      // int32 x: onnxruntime rounds x to float32 first, then multiplies (two roundings); we round
      // the exact product once.
      const sv = scaleValues[granularity === "tensor" ? 0 : granularity === "axis" ? i % COLS : Math.floor(i / COLS) * Math.ceil(COLS / 20) + Math.floor((i % COLS) / 20)];
      if (input === "int32" && scaleType === "float32" && theirs[i] === Math.fround(Math.fround(xs[i]) * sv)) {
        int32Rounding++;
        continue;
      }
      if (mismatches.length < 20) mismatches.push(`opset ${opset} ${input} * ${scaleType} ${granularity} element ${i}: x ${xs[i]}: ours ${ours[i]}, onnxruntime ${theirs[i]}`);
    }
  }
  t.diagnostic(`${int32Rounding} elements: int32 x rounded to float32 before the product (onnxruntime); we round the exact product once`);
  t.diagnostic(`${elements} elements compared`);
  assert.deepEqual(mismatches, []);
});

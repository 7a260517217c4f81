/**
 * The README's table of transformers.js variants (issue 26 point 6): sizes and accuracy against
 * float32 on a real architecture.
 *
 *   npx tsc -p tsconfig.test.json && node build/bench/quantize-variants.js
 *
 * The model: a BERT-like encoder built here (hidden 256, 4 layers of 4-head self-attention and a
 * 1024-wide GELU MLP, post-LayerNorm, vocabulary 8192, 32 positions: 5.3 M parameters, 20.3 MiB),
 * weights drawn as BERT initializes them (normal, standard deviation 0.02; LayerNorm scale 1, bias
 * 0; biases 0.02-normal too, so that they are not trivially zero). Each variant is made by
 * quantizeModel and run in onnxruntime-node on 8 random sequences of 32 token ids; against the
 * float32 model's last hidden state it reports the largest absolute difference, the relative RMS
 * error (RMS of the difference over RMS of float32's), and the worst cosine similarity of the
 * mean-pooled features (the sentence embedding feature-extraction pipelines return).
 */
import * as ort from "onnxruntime-node";
import { quantizeModel, type QuantizeOptions } from "../src/io/onnx/quantize/model.js";
import { W } from "../test/support/protobuf.js";
import { node, valueInfo, weightModel, type Weight } from "../test/node/quantize-model-streamed.js";

const H = 256;
const LAYERS = 4;
const HEADS = 4;
const FFN = 1024;
const VOCAB = 8192;
const S = 32;

/** Box-Muller normals from mulberry32, as float32 bytes. */
function normal(n: number, std: number, seed: number): Uint8Array {
  let a = seed >>> 0;
  const u = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 0.5) / 4294967296;
  };
  const f = new Float32Array(n);
  for (let i = 0; i < n; i++) f[i] = Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u()) * std;
  return new Uint8Array(f.buffer);
}

const filled = (n: number, v: number): Uint8Array => new Uint8Array(new Float32Array(n).fill(v).buffer);

/** A Constant node of an int64 vector. */
function int64Constant(out: string, values: number[]): W {
  const t = new W().int(1, values.length).int(2, 7).len(9, new Uint8Array(new BigInt64Array(values.map(BigInt)).buffer));
  return node("Constant", [], [out], `${out}_const`, [new W().len(1, "value").len(5, t).int(20, 4)]);
}

const intAttr = (name: string, v: number): W => new W().len(1, name).int(3, v).int(20, 2);
const intsAttr = (name: string, vs: number[]): W => {
  const a = new W().len(1, name);
  for (const v of vs) a.int(8, v);
  return a.int(20, 7);
};

function bertLike(): Uint8Array {
  let seed = 1;
  const weights: Weight[] = [];
  const w = (name: string, dims: number[], bytes?: Uint8Array): string => {
    weights.push({ name, dims, external: false, bytes: bytes ?? normal(dims.reduce((p, d) => p * d, 1), 0.02, seed++) });
    return name;
  };
  const nodes: W[] = [];
  const add = (op: string, inputs: string[], out: string, attrs: W[] = []): string => {
    nodes.push(node(op, inputs, [out], out, attrs));
    return out;
  };
  const ln = (x: string, name: string): string => add("LayerNormalization", [x, w(`${name}.gamma`, [H], filled(H, 1)), w(`${name}.beta`, [H], filled(H, 0))], name, [intAttr("axis", -1)]);
  const linear = (x: string, name: string, k: number, n: number): string => add("Add", [add("MatMul", [x, w(`${name}.weight`, [k, n])], `${name}.mm`), w(`${name}.bias`, [n])], name);
  nodes.push(int64Constant("heads_shape", [1, S, HEADS, H / HEADS]), int64Constant("hidden_shape", [1, S, H]));
  w("inv_sqrt_d", [], filled(1, 1 / Math.sqrt(H / HEADS)));
  w("sqrt2", [], filled(1, Math.SQRT2));
  w("half", [], filled(1, 0.5));
  w("one", [], filled(1, 1));
  const e = add("Add", [add("Gather", [w("embeddings.word", [VOCAB, H]), "ids"], "embeddings.gather"), w("embeddings.position", [S, H])], "embeddings.sum");
  let h = ln(e, "embeddings.ln");
  for (let l = 0; l < LAYERS; l++) {
    const p = `layer${l}`;
    const heads = (x: string, name: string, perm: number[]): string => add("Transpose", [add("Reshape", [x, "heads_shape"], `${name}.split`)], `${name}.t`, [intsAttr("perm", perm)]);
    const q = heads(linear(h, `${p}.query`, H, H), `${p}.q`, [0, 2, 1, 3]);
    const k = heads(linear(h, `${p}.key`, H, H), `${p}.k`, [0, 2, 3, 1]);
    const v = heads(linear(h, `${p}.value`, H, H), `${p}.v`, [0, 2, 1, 3]);
    const scores = add("Mul", [add("MatMul", [q, k], `${p}.scores`), "inv_sqrt_d"], `${p}.scaled`);
    const ctx = add("MatMul", [add("Softmax", [scores], `${p}.probs`, [intAttr("axis", -1)]), v], `${p}.ctx`);
    const merged = add("Reshape", [add("Transpose", [ctx], `${p}.ctx.t`, [intsAttr("perm", [0, 2, 1, 3])]), "hidden_shape"], `${p}.merged`);
    const h1 = ln(add("Add", [h, linear(merged, `${p}.attn_out`, H, H)], `${p}.res1`), `${p}.ln1`);
    const f = linear(h1, `${p}.ffn_in`, H, FFN);
    const erf = add("Erf", [add("Div", [f, "sqrt2"], `${p}.gelu.div`)], `${p}.gelu.erf`);
    const gelu = add("Mul", [add("Mul", [f, add("Add", [erf, "one"], `${p}.gelu.add`)], `${p}.gelu.mul`), "half"], `${p}.gelu`);
    h = ln(add("Add", [h1, linear(gelu, `${p}.ffn_out`, FFN, H)], `${p}.res2`), `${p}.ln2`);
  }
  nodes.push(node("Identity", [h], ["last_hidden_state"], "output"));
  const model = weightModel(nodes, weights, [valueInfo("ids", 7, [1, S])], [valueInfo("last_hidden_state", 1, [1, S, H])], { inline: true });
  return model;
}

async function run(bytes: Uint8Array, ids: BigInt64Array[]): Promise<Float32Array[]> {
  const session = await ort.InferenceSession.create(bytes, { executionProviders: ["cpu"] });
  try {
    const out: Float32Array[] = [];
    for (const x of ids) out.push((await session.run({ ids: new ort.Tensor("int64", x, [1, S]) })).last_hidden_state.data as Float32Array);
    return out;
  } finally {
    await session.release();
  }
}

function meanPool(y: Float32Array): Float64Array {
  const m = new Float64Array(H);
  for (let s = 0; s < S; s++) for (let j = 0; j < H; j++) m[j] += y[s * H + j] / S;
  return m;
}

const base = bertLike();
let a = 12345;
const ids = Array.from({ length: 8 }, () => BigInt64Array.from({ length: S }, () => BigInt((a = (Math.imul(a, 1103515245) + 12345) >>> 0) % VOCAB)));
const want = await run(base, ids);
const modes: [string, QuantizeOptions][] = [
  ["q4", { mode: "q4" }], ["q4f16", { mode: "q4f16" }], ["bnb4", { mode: "bnb4" }], ["int8", { mode: "int8" }], ["uint8", { mode: "uint8" }],
  ["q8", { mode: "q8" }], ["fp16", { mode: "fp16" }],
];
console.log(`# BERT-like encoder: ${(base.length / 2 ** 20).toFixed(1)} MiB float32; 8 sequences of ${S} ids; Node ${process.version}, onnxruntime-node ${ort.env.versions.common}`);
console.log("| mode | size vs float32 | nodes quantized | largest abs error | relative RMS error | worst cosine (mean-pooled) |\n|---|---:|---:|---:|---:|---:|");
for (const [label, opts] of modes) {
  const r = quantizeModel(base, opts);
  const got = await run(r.bytes, ids);
  let worst = 0;
  let diff2 = 0;
  let ref2 = 0;
  let cosine = 1;
  got.forEach((g, k) => {
    for (let i = 0; i < g.length; i++) {
      const d = g[i] - want[k][i];
      worst = Math.max(worst, Math.abs(d));
      diff2 += d * d;
      ref2 += want[k][i] * want[k][i];
    }
    const [p, q] = [meanPool(g), meanPool(want[k])];
    let dot = 0;
    let pp = 0;
    let qq = 0;
    for (let j = 0; j < H; j++) [dot, pp, qq] = [dot + p[j] * q[j], pp + p[j] * p[j], qq + q[j] * q[j]];
    cosine = Math.min(cosine, dot / Math.sqrt(pp * qq));
  });
  console.log(`| ${label} | ${((100 * r.bytes.length) / base.length).toFixed(1)}% | ${r.quantized} | ${worst.toPrecision(3)} | ${Math.sqrt(diff2 / ref2).toPrecision(3)} | ${cosine.toFixed(6)} |`);
}

/**
 * The bfloat16 whole-graph conversions, run in onnxruntime-node through bf16-emulate.ts: every
 * bfloat16 value is a float32 holding the bfloat16 value, every Cast to bfloat16 is onnxruntime's
 * own Cast followed by a Cast back, and every operator's float32 result is rounded once to
 * bfloat16. A true bfloat16 kernel may accumulate differently (in bfloat16, in float32, in another
 * order), so the emulated outputs are compared with the float32 model's within bfloat16's
 * tolerance per model (models.ts), not bit for bit; the rounding itself is checked bit for bit
 * (onnxruntime's Cast against tensorcast's, and every emulated output is a bfloat16 value).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { onnxMissing, PYTHON } from "../../support/python.js";
import { after, describe, it } from "node:test";
import { encodeModel } from "../../../src/io/onnx/encode.js";
import { convertModelPrecision, type PrecisionOptions } from "../../../src/io/onnx/precision/model.js";
import { decodeModel, type OnnxNode } from "../../../src/io/onnx/model.js";
import { PbMessage } from "../../../src/io/onnx/precision/pb.js";
import { cast } from "../../../src/ops/cast.js";
import { Tensor } from "../../../src/tensor.js";
import { W } from "../../support/protobuf.js";
import { Rng } from "../../support/rng.js";
import { emulateBfloat16 } from "./bf16-emulate.js";
import { allModels, subgraphWeights, type TestModel } from "./models.js";
import { runInChild, tempModels, type RunFeed, type RunJob, type RunResult } from "./ort-run.js";

type Variant = "bfloat16" | "bfloat16-keep-io";
const VARIANTS: Record<Variant, PrecisionOptions> = {
  bfloat16: { to: "bfloat16" },
  "bfloat16-keep-io": { to: "bfloat16", keepIoTypes: true },
};

/** Float values rounded to bfloat16 (and back to float32): what a bfloat16 input can hold. */
function bf16Values(values: number[]): number[] {
  const codes = cast(Tensor.fromValues(values, "float32"), "bfloat16");
  return Array.from(cast(codes, "float32").data as Float32Array);
}

function feedsFor(m: TestModel, v: Variant): RunFeed[] {
  return m.feeds.map((f) => (v === "bfloat16" && f.type === "float32" ? { ...f, values: bf16Values(f.values) } : { ...f }));
}

/** Largest |b - a| / max(1, |a|) over every output; NaN where only one side is NaN. */
function worstDiff(a: RunResult, b: RunResult): number {
  assert.ok(a.ok && b.ok, `a run failed: ${!a.ok ? a.error : ""} ${!b.ok ? b.error : ""}`);
  let worst = 0;
  for (const [name, x] of Object.entries(a.outputs)) {
    const y: { dims: number[]; values: number[] } | undefined = b.outputs[name];
    assert.ok(y, `output ${name} is missing`);
    assert.deepEqual(y.dims, x.dims, `output ${name}'s shape`);
    for (let i = 0; i < x.values.length; i++) {
      const err = Math.abs(y.values[i] - x.values[i]) / Math.max(1, Math.abs(x.values[i]));
      if (!(err <= worst)) worst = err;
    }
  }
  return worst;
}

// The If and Loop models are at opset 13, where If and Loop allow no bfloat16 (their bodies stay
// float32), and their values are exact in bfloat16; the subgraph-weights model at opset 16 has
// bfloat16 bodies (If branches, a Loop body with a nested If) reading rounded weights.
const models = [...allModels(), { ...subgraphWeights((t) => t, 16), name: "subgraph_weights_16" }];
const store = tempModels();
after(() => store.dispose());

interface Case {
  model: TestModel;
  variant: Variant;
  emulated: ReturnType<typeof emulateBfloat16>;
  /** Why the emulation refused the converted model, when it did (a type error in the conversion). */
  refused?: string;
}
const cases: Case[] = [];
for (const model of models) {
  for (const variant of Object.keys(VARIANTS) as Variant[]) {
    const converted = convertModelPrecision(model.bytes, VARIANTS[variant]).bytes;
    try {
      cases.push({ model, variant, emulated: emulateBfloat16(converted) });
    } catch (e) {
      // Reported by the case's tests rather than failing the whole file.
      cases.push({ model, variant, emulated: { bytes: converted, tensors: 0, declarations: 0, casts: 0, rounded: 0 }, refused: String((e as Error).message) });
    }
  }
}

// One child process: the float32 originals, the float16 --keep-io-types conversions, the emulations.
const jobs: RunJob[] = [];
for (const m of models) jobs.push({ path: store.path(`${m.name}.onnx`, m.bytes), feeds: m.feeds, bits: true });
for (const m of models) {
  const f16 = convertModelPrecision(m.bytes, { to: "float16", keepIoTypes: true }).bytes;
  jobs.push({ path: store.path(`${m.name}.f16.onnx`, f16), feeds: m.feeds });
}
for (const c of cases) jobs.push({ path: store.path(`${c.model.name}.${c.variant}.emu.onnx`, c.emulated.bytes), feeds: feedsFor(c.model, c.variant), bits: true });
const results = runInChild(jobs);
const float32Of = (m: TestModel): RunResult => results[models.indexOf(m)];
const float16Of = (m: TestModel): RunResult => results[models.length + models.indexOf(m)];
const emulatedOf = (c: Case): RunResult => results[2 * models.length + cases.indexOf(c)];

describe("bfloat16 graphs, emulated in onnxruntime-node, compute what the float32 model computes", () => {
  for (const c of cases) {
    const tol = c.model.tolerance.bfloat16;
    it(`${c.model.name} -> ${c.variant}: within ${tol} of float32 and of the float16 run; every output a bfloat16 value`, (t) => {
      assert.equal(c.refused, undefined, "the emulation refused the converted model");
      const got = emulatedOf(c);
      assert.ok(got.ok, `the emulated model failed: ${!got.ok ? got.error : ""}`);
      const vs32 = worstDiff(float32Of(c.model), got);
      assert.ok(vs32 <= tol, `largest error against float32 ${vs32} exceeds ${tol}`);
      const vs16 = worstDiff(float16Of(c.model), got);
      assert.ok(vs16 <= tol, `largest difference from the float16 run ${vs16} exceeds ${tol}`);
      for (const [name, o] of Object.entries(got.outputs)) {
        assert.equal(o.type, "float32");
        // Every output went through a Cast to bfloat16 last: its low 16 bits are zero.
        const odd = o.bits!.filter((b) => (b & 0xffff) !== 0);
        assert.deepEqual(odd, [], `${name}: values that are not bfloat16`);
      }
      // Loop-13 and If-13 allow no bfloat16: with float32 io only the Relu after the Loop is bfloat16.
      const { rounded, casts, tensors, declarations } = c.emulated;
      assert.ok(rounded > 0 && casts + tensors + declarations > 0, JSON.stringify({ rounded, casts, tensors, declarations }));
      t.diagnostic(`against float32 ${vs32.toExponential(2)}, against float16 ${vs16.toExponential(2)}; ${rounded} outputs rounded, ${casts} Casts, ${tensors} tensors, ${declarations} declarations`);
    });
  }

  it("the emulation is not vacuous: the MLP's emulated output differs from float32's in most elements", () => {
    const c = cases.find((x) => x.model.name === "mlp" && x.variant === "bfloat16-keep-io")!;
    const a = float32Of(c.model);
    const b = emulatedOf(c);
    assert.ok(a.ok && b.ok);
    const differing = a.outputs.y.bits!.filter((bits, i) => bits !== b.outputs.y.bits![i]).length;
    assert.ok(differing >= a.outputs.y.bits!.length / 2, `only ${differing} of ${a.outputs.y.bits!.length} differ`);
    // Gemm, Relu, MatMul, Add and Sigmoid each rounded; x is cast at the input.
    assert.equal(c.emulated.rounded, 5);
    assert.equal(c.emulated.casts, 1);
  });
});

describe("onnxruntime's Cast float32 -> bfloat16 rounds as tensorcast's cast does (nearest, ties to even)", () => {
  // Bit patterns: random, ties (low half 0x8000) with even and odd kept parts, one ulp either side
  // of a tie, subnormals, the largest finite values (which round to Inf), zeros, Inf, NaNs.
  const rng = new Rng(16);
  const bits: number[] = [];
  for (let i = 0; i < 2000; i++) bits.push(rng.u32());
  for (let i = 0; i < 500; i++) {
    const hi = rng.u32() & 0xffff0000;
    bits.push((hi | 0x8000) >>> 0, (hi | 0x7fff) >>> 0, (hi | 0x8001) >>> 0, ((hi ^ 0x10000) | 0x8000) >>> 0);
  }
  for (let i = 0; i < 200; i++) bits.push(rng.u32() & 0x807fffff);
  bits.push(0x7f7fffff, 0xff7fffff, 0x7f7f8000, 0x7f7f7fff, 0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0x7fffffff, 0xff812345, 0x00008000, 0x00018000, 0x80008000);
  const values = Float32Array.from(new Float32Array(Uint32Array.from(bits).buffer));
  // The values are an initializer (a feed would pass through JSON, losing -0 and NaN) and the
  // session optimises nothing, so the Cast kernels themselves run.
  const bytes = encodeModel({
    irVersion: 8, opsetImports: [{ domain: "", version: 13 }],
    graph: {
      name: "cast_bf16",
      nodes: [
        { name: "to_bf16", opType: "Cast", domain: "", inputs: ["v"], outputs: ["b"], attributes: [{ name: "to", type: "INT", value: 16n }] },
        { name: "to_f32", opType: "Cast", domain: "", inputs: ["b"], outputs: ["y"], attributes: [{ name: "to", type: "INT", value: 1n }] },
      ],
      initializers: [{ name: "v", tensor: Tensor.fromStorage(values, "float32", [values.length]) }],
      inputs: [], outputs: [{ name: "y", elemType: 1, shape: [values.length] }],
    },
  });
  const [run] = runInChild([{ path: store.path("cast_bf16.onnx", bytes), feeds: [], level: "disabled", bits: true }]);
  it(`${bits.length} values: equal bits, NaNs included`, (t) => {
    assert.ok(run.ok, !run.ok ? run.error : "");
    const want = cast(Tensor.fromStorage(values, "float32", [values.length]), "bfloat16").data as Uint16Array;
    const got = run.outputs.y.bits!;
    const wrong: string[] = [];
    let ties = 0;
    for (let i = 0; i < bits.length; i++) {
      const w = (want[i] << 16) >>> 0;
      const nan = Number.isNaN(values[i]);
      if ((bits[i] & 0xffff) === 0x8000 && !nan) ties++;
      // NaN too: both keep the sign and make the quiet NaN 0x7fc0 / 0xffc0.
      if (got[i] !== w) {
        wrong.push(`${bits[i].toString(16)}: onnxruntime ${got[i].toString(16)}, tensorcast ${w.toString(16)}`);
      }
    }
    assert.deepEqual(wrong.slice(0, 10), []);
    t.diagnostic(`${ties} ties, ${values.filter(Number.isNaN).length} NaNs`);
    assert.ok(ties >= 900, `only ${ties} ties`);
  });
});

describe("the emulation refuses a wrongly typed bfloat16 model, and a wrong value fails the comparison", () => {
  const mlp = models.find((m) => m.name === "mlp")!;
  const cnn = models.find((m) => m.name === "cnn")!;
  const code = (f: () => unknown): string => {
    try {
      f();
    } catch (e) {
      return `${(e as { code?: string }).code}: ${(e as Error).message}`;
    }
    return "no error";
  };

  it("a Cast to bfloat16 after the kept float32 MaxPool dropped: the bfloat16 Gemm reads float32", () => {
    const m = PbMessage.parse(convertModelPrecision(cnn.bytes, VARIANTS["bfloat16-keep-io"]).bytes, "ModelProto");
    const g = m.sub(7)!;
    const nodes = g.subs(1);
    const k = nodes.findIndex((n) => n.string(4) === "Cast" && n.strings(1)[0] === "p" && n.subs(5)[0].int(3) === 16);
    assert.ok(k >= 0, "the converted CNN casts MaxPool's output to bfloat16");
    const [from, to] = [nodes[k].strings(1)[0], nodes[k].strings(2)[0]];
    for (const n of nodes) n.strings(1).forEach((s, j) => s === to && n.setStringAt(1, j, from));
    g.fields = g.fields.filter((f) => f.no !== 1 || f.msg !== nodes[k]);
    assert.match(code(() => emulateBfloat16(m.encode())), /^INVALID_DATA: .*Flatten .* makes type 1|^INVALID_DATA: .*bound to T are types/);
  });

  it("an initializer left float32 where the bfloat16 Gemm reads it", () => {
    const original = PbMessage.parse(mlp.bytes, "ModelProto").sub(7)!;
    const w1 = original.all(5).find((f) => original.message(f, "TensorProto").string(8) === "w1")!;
    const m = PbMessage.parse(convertModelPrecision(mlp.bytes, VARIANTS.bfloat16).bytes, "ModelProto");
    const g = m.sub(7)!;
    const f = g.all(5).find((x) => g.message(x, "TensorProto").string(8) === "w1")!;
    f.msg = undefined;
    f.data = w1.data;
    assert.match(code(() => emulateBfloat16(m.encode())), /^INVALID_DATA: .*Gemm .*inputs bound to T are types 16 and 1/);
  });

  it("a bfloat16 weight with its sign flipped runs, and fails the tolerance", () => {
    const m = PbMessage.parse(convertModelPrecision(mlp.bytes, VARIANTS["bfloat16-keep-io"]).bytes, "ModelProto");
    const g = m.sub(7)!;
    const w2 = g.subs(5).find((t) => t.string(8) === "w2")!;
    const raw = w2.all(9)[0].data.slice();
    for (let i = 1; i < raw.length; i += 2) raw[i] ^= 0x80;
    w2.all(9)[0].data = raw;
    const emulated = emulateBfloat16(m.encode());
    const [r] = runInChild([{ path: store.path("mlp.flipped.emu.onnx", emulated.bytes), feeds: mlp.feeds }]);
    assert.ok(worstDiff(float32Of(mlp), r) > mlp.tolerance.bfloat16);
  });
});


describe("the emulated models pass onnx.checker with full_check (type and shape inference)", { skip: onnxMissing() }, () => {
  for (const c of cases) {
    it(`${c.model.name} -> ${c.variant}`, () => {
      assert.equal(c.refused, undefined, "the emulation refused the converted model");
      const path = store.path(`${c.model.name}.${c.variant}.emu.check.onnx`, c.emulated.bytes);
      const r = spawnSync(PYTHON, ["-c", "import onnx,sys; m=onnx.load(sys.argv[1]); onnx.checker.check_model(m, full_check=max(o.version for o in m.opset_import if o.domain in ('', 'ai.onnx')) <= 17)", path], { encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr.split("\n").slice(-3).join("\n"));
    });
  }
});

describe("emulateBfloat16's rewrite, node by node", () => {
  it("the MLP with --keep-io-types: a Cast pair after every bfloat16 result, Casts to bfloat16 kept, weights widened exactly", () => {
    const converted = convertModelPrecision(models[0].bytes, VARIANTS["bfloat16-keep-io"]).bytes;
    const g = decodeModel(emulateBfloat16(converted).bytes).graph;
    const show = (n: OnnxNode): string => {
      const to = n.attributes[0];
      return n.opType === "Cast" && to.type === "INT" ? `Cast${to.value}` : n.opType;
    };
    assert.deepEqual(g.nodes.map(show), [
      "Cast16", "Cast1", "Gemm", "Cast16", "Cast1", "Relu", "Cast16", "Cast1", "MatMul", "Cast16", "Cast1",
      "Add", "Cast16", "Cast1", "Sigmoid", "Cast16", "Cast1", "Cast1",
    ]);
    // Each pair reads what the node computed and writes the name the node used to write.
    assert.deepEqual(g.nodes.slice(2, 5).map((n) => `${n.inputs.join(",")}>${n.outputs.join(",")}`), ["x__bfloat16,w1,b1>h1__f32", "h1__f32>h1__bf16", "h1__bf16>h1"]);
    const before = decodeModel(converted).graph;
    for (const t of g.initializers) {
      const bf = before.initializers.find((b) => b.name === t.name)!.tensor;
      assert.equal(t.tensor.dtype.name, "float32");
      assert.deepEqual(Array.from(new Uint32Array(t.tensor.bytes().slice().buffer)), Array.from(bf.data as Uint16Array, (c) => (c << 16) >>> 0), t.name);
    }
  });

  it("a bfloat16 tensor stored in int32_data, and a bfloat16 input and output", () => {
    const tensor = new W().int(2, 16).packed(5, [0x3f80, 0xbfc0, 0x7f80]).len(8, "c").int(1, 3);
    const vi = (name: string) => new W().len(1, name).len(2, new W().len(1, new W().int(1, 16).len(2, new W().len(1, new W().int(1, 3)))));
    const graph = new W().len(1, new W().len(1, "x").len(1, "c").len(2, "y").len(3, "add").len(4, "Add"))
      .len(2, "g").len(5, tensor).len(11, vi("x")).len(12, vi("y"));
    const bytes = new W().int(1, 8).len(8, new W().len(1, "").int(2, 13)).len(7, graph).bytes();
    const r = emulateBfloat16(bytes);
    assert.deepEqual([r.tensors, r.declarations, r.rounded, r.casts], [1, 2, 1, 0]);
    const g = decodeModel(r.bytes).graph;
    assert.deepEqual(g.initializers[0].tensor.toValues(), [1, -1.5, Infinity]);
    assert.deepEqual([g.inputs[0].elemType, g.outputs[0].elemType], [1, 1]);
    assert.deepEqual(g.nodes.map((n) => n.opType), ["Add", "Cast", "Cast"]);
  });
});

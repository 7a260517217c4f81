/**
 * Initializers inside If / Loop bodies (nested two deep), converted by convertModelPrecision:
 * weights only (float8e4m3fn, int4, float16) stores each as the target with its Cast back to
 * float32 inside the body that holds it; the whole-graph pass (float16, bfloat16) converts them in
 * place. Checked: every stored tensor equals a plain Cast bit for bit, names are unique across the
 * whole model (no new name shadows a value of an enclosing graph), each Cast precedes every reader
 * in its own graph, onnxruntime-node (child process) gives exactly the outputs of the float32 model
 * built on the cast-back weights, and python onnx's checker (full_check) accepts what onnx 1.12
 * can read.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { onnxMissing, PYTHON } from "../../support/python.js";
import { after, describe, it } from "node:test";
import { convertModelPrecision, type PrecisionResult } from "../../../src/io/onnx/precision/model.js";
import { bodiesOf } from "../../../src/io/onnx/precision/graph.js";
import { PbMessage } from "../../../src/io/onnx/precision/pb.js";
import { decodeTensorProto } from "../../../src/io/onnx/tensorproto.js";
import { cast } from "../../../src/ops/cast.js";
import { Tensor } from "../../../src/tensor.js";
import { subgraphWeights, type Feed } from "./models.js";
import { runInChild, tempModels, type RunFeed, type RunJob } from "./ort-run.js";

interface GraphView {
  name: string;
  /** Names this graph defines: initializers, inputs, node outputs. */
  defines: string[];
  inputs: string[];
  inits: Map<string, Tensor>;
  nodes: { opType: string; inputs: string[]; outputs: string[]; to?: number }[];
  /** The names every enclosing graph defines. */
  outer: Set<string>;
}

/** Every graph of a serialized model, the main one first, then bodies depth first. */
function graphsOf(bytes: Uint8Array): GraphView[] {
  const out: GraphView[] = [];
  const walk = (g: PbMessage, outer: Set<string>): void => {
    const inits = new Map(g.subs(5, "TensorProto").map((t) => {
      const d = decodeTensorProto(t.encode());
      return [d.name, d.tensor] as const;
    }));
    const nodes = g.subs(1, "NodeProto").map((n) => {
      const to = n.subs(5, "AttributeProto").find((a) => a.string(1) === "to");
      return { opType: n.string(4), inputs: n.strings(1), outputs: n.strings(2), to: to ? to.int(3) : undefined };
    });
    const inputs = g.subs(11, "ValueInfoProto").map((v) => v.string(1));
    const defines = [...inits.keys(), ...inputs, ...nodes.flatMap((n) => n.outputs)];
    const view: GraphView = { name: g.string(2), defines, inputs, inits, nodes, outer };
    out.push(view);
    const inner = new Set([...outer, ...defines]);
    for (const n of g.subs(1, "NodeProto")) for (const b of bodiesOf(n)) walk(b, inner);
  };
  walk(PbMessage.parse(bytes, "ModelProto").sub(7, "GraphProto")!, new Set());
  return out;
}

const TARGETS = ["float8e4m3fn", "int4", "float16"] as const;
/** The float32 initializers of the model, per graph. */
const FLOAT_INITS: Record<string, string[]> = {
  subgraph_weights: ["two", "w"], then: ["bt"], else: ["be"], body: ["bl"], inner_then: ["bn"], inner_else: [],
};

const store = tempModels();
after(() => store.dispose());

const original = subgraphWeights();
const originalGraphs = new Map(graphsOf(original.bytes).map((g) => [g.name, g]));
const feeds = (cond: number, f16 = false): RunFeed[] =>
  original.feeds.map((f: Feed) => (f.name === "cond" ? { ...f, values: [cond] } : { ...f, type: f16 && f.type === "float32" ? "float16" : f.type }));

const weights = TARGETS.map((to) => ({
  to,
  result: convertModelPrecision(original.bytes, { to, weightsOnly: true }),
  // The float32 model on the weights the conversion stores, read back as float32.
  reference: subgraphWeights((t) => cast(cast(t, to, { saturate: true }), "float32")),
}));
// If-13 and Loop-13 allow no bfloat16 values (If-16 and Loop-16 do): the bfloat16 pass gets opset 16.
const wholeGraph = [
  { to: "float16" as const, result: convertModelPrecision(original.bytes, { to: "float16" }) },
  { to: "bfloat16" as const, result: convertModelPrecision(subgraphWeights(undefined, 16).bytes, { to: "bfloat16", keepIoTypes: true }) },
];

// One child process: per target, the reference and the converted model, with both If branches.
const jobs: RunJob[] = [];
for (const w of weights) {
  for (const cond of [1, 0]) {
    jobs.push({ path: store.path(`ref.${w.to}.onnx`, w.reference.bytes), feeds: feeds(cond) });
    jobs.push({ path: store.path(`weights.${w.to}.onnx`, w.result.bytes), feeds: feeds(cond) });
  }
}
for (const cond of [1, 0]) {
  jobs.push({ path: store.path("f32.onnx", original.bytes), feeds: feeds(cond) });
  jobs.push({ path: store.path("graph.float16.onnx", wholeGraph[0].result.bytes), feeds: feeds(cond, true) });
}
const runs = runInChild(jobs);

function assertNamesFresh(result: PrecisionResult, label: string): void {
  const graphs = graphsOf(result.bytes);
  const seen = new Set<string>();
  for (const g of graphs) {
    for (const name of g.defines) {
      assert.ok(!seen.has(name), `${label}: ${name} is defined twice in the model (graph ${g.name})`);
      assert.ok(!g.outer.has(name), `${label}: ${name} in ${g.name} shadows a value of an enclosing graph`);
      seen.add(name);
    }
    // Every name a node reads is defined before it: in an enclosing graph or earlier in this one.
    const ready = new Set([...g.outer, ...g.inits.keys(), ...g.inputs]);
    for (const n of g.nodes) {
      for (const s of n.inputs) assert.ok(s === "" || ready.has(s), `${label}: ${g.name} reads ${s} before it is defined`);
      for (const s of n.outputs) ready.add(s);
    }
  }
}

describe("weights only: initializers in If and Loop bodies are stored as the target, with their Cast in the same body", () => {
  for (const w of weights) {
    it(`${w.to}: every float32 initializer of every graph is stored, and equals a plain Cast bit for bit`, () => {
      const graphs = graphsOf(w.result.bytes);
      assert.deepEqual(graphs.map((g) => g.name), ["subgraph_weights", "then", "else", "body", "inner_then", "inner_else"]);
      let stored = 0;
      for (const g of graphs) {
        const before = originalGraphs.get(g.name)!;
        for (const name of FLOAT_INITS[g.name]) {
          assert.ok(!g.inits.has(name), `${g.name}: ${name} is still an initializer`);
          // The Cast back to float32 writes the original name, in this very graph.
          const back = g.nodes.find((n) => n.opType === "Cast" && n.outputs[0] === name);
          assert.ok(back, `${g.name}: no Cast writes ${name}`);
          assert.equal(back.to, 1);
          const kept = g.inits.get(back.inputs[0]);
          assert.ok(kept, `${g.name}: ${name}'s Cast reads ${back.inputs[0]}, which is not an initializer of that graph`);
          assert.equal(kept.dtype.name, w.to);
          assert.deepEqual(kept.bytes(), cast(before.inits.get(name)!, w.to, { saturate: true }).bytes(), `${g.name}: ${name}`);
          stored++;
        }
        for (const [name, t] of g.inits) assert.notEqual(t.dtype.name, "float32", `${g.name}: ${name} is still float32`);
      }
      assert.equal(stored, 6);
      assert.equal(w.result.castsInserted, 6);
      assert.deepEqual(w.result.tensors.map((t) => t.name).sort(), ["be", "bl", "bn", "bt", "two", "w"]);
    });

    it(`${w.to}: new names are unique across the model, shadow no outer value, and every Cast precedes its readers`, () => {
      assertNamesFresh(w.result, w.to);
      const then = graphsOf(w.result.bytes).find((g) => g.name === "then")!;
      // bt__float16 is an outer value that the then branch reads: the stored copy takes another name.
      if (w.to === "float16") assert.equal(then.nodes.find((n) => n.outputs[0] === "bt")!.inputs[0], "bt__float16_1");
    });

    it(`${w.to}: onnxruntime gives exactly the float32 model's outputs on the cast-back weights (both If branches)`, () => {
      const k = weights.indexOf(w) * 4;
      for (const at of [k, k + 2]) {
        const [ref, got] = [runs[at], runs[at + 1]];
        assert.ok(ref.ok, !ref.ok ? ref.error : "");
        assert.ok(got.ok, !got.ok ? got.error : "");
        assert.equal(got.outputs.y.type, "float32");
        assert.deepEqual(got.outputs.y.dims, [2, 3]);
        assert.deepEqual(got.outputs.y.values, ref.outputs.y.values);
      }
      // The weights changed something, or the comparison would prove nothing.
      const [f32, got] = [runs[weights.length * 4], runs[k + 1]];
      assert.ok(f32.ok && got.ok);
      if (w.to !== "float16") assert.notDeepEqual(got.outputs.y.values, f32.outputs.y.values);
    });
  }
});

describe("whole graph: initializers in If and Loop bodies are converted in place", () => {
  for (const g of wholeGraph) {
    it(`${g.to}: every float32 initializer of every graph is ${g.to}, equal to a plain Cast`, () => {
      let converted = 0;
      for (const view of graphsOf(g.result.bytes)) {
        const before = originalGraphs.get(view.name)!;
        for (const name of FLOAT_INITS[view.name]) {
          const t = view.inits.get(name);
          assert.ok(t, `${view.name}: ${name} is gone`);
          assert.equal(t.dtype.name, g.to, `${view.name}: ${name}`);
          assert.deepEqual(t.bytes(), cast(before.inits.get(name)!, g.to).bytes());
          converted++;
        }
      }
      assert.equal(converted, 6);
      assert.deepEqual(g.result.kept, []);
      assertNamesFresh(g.result, g.to);
    });
  }

  it("bfloat16 at opset 13: If-13 and Loop-13 allow no bfloat16, so they and their bodies stay float32 with their weights", () => {
    const r = convertModelPrecision(original.bytes, { to: "bfloat16", keepIoTypes: true });
    assert.deepEqual(r.kept.filter((k) => k.graph === "subgraph_weights").map((k) => k.reason), [
      "If-13 does not allow bfloat16 for its values", "Loop-13 does not allow bfloat16 for its values",
    ]);
    assert.deepEqual(r.tensors.map((t) => t.name), ["two"]);
    for (const view of graphsOf(r.bytes)) for (const name of FLOAT_INITS[view.name]) if (name !== "two") assert.equal(view.inits.get(name)!.dtype.name, "float32");
  });

  it("float16 runs in onnxruntime within the model's tolerance of float32 (both If branches)", () => {
    const base = weights.length * 4;
    for (const at of [base, base + 2]) {
      const [f32, f16] = [runs[at], runs[at + 1]];
      assert.ok(f32.ok, !f32.ok ? f32.error : "");
      assert.ok(f16.ok, !f16.ok ? f16.error : "");
      assert.equal(f16.outputs.y.type, "float16");
      f32.outputs.y.values.forEach((v, i) => {
        const err = Math.abs(f16.outputs.y.values[i] - v) / Math.max(1, Math.abs(v));
        assert.ok(err <= original.tolerance.float16, `y[${i}]: ${f16.outputs.y.values[i]} against ${v}`);
      });
    }
  });
});


describe("onnx.checker.check_model(full_check=True) accepts the conversions onnx 1.12 can read", { skip: onnxMissing() }, () => {
  // onnx 1.12 knows IR 8 and opsets up to 17: the float8 (opset 19, IR 9) and int4 (opset 21,
  // IR 10) models are beyond it; their structure is the float16 weights-only model's.
  const bf16Weights = convertModelPrecision(original.bytes, { to: "bfloat16", weightsOnly: true });
  const checked: [string, Uint8Array][] = [
    ["float32 original", original.bytes],
    ["float16 weights", weights[2].result.bytes],
    ["bfloat16 weights", bf16Weights.bytes],
    ["float16 graph", wholeGraph[0].result.bytes],
    ["bfloat16 graph", wholeGraph[1].result.bytes],
  ];
  for (const [label, bytes] of checked) {
    it(label, () => {
      const path = store.path(`${label.replace(/ /g, "_")}.check.onnx`, bytes);
      const r = spawnSync(PYTHON, ["-c", "import onnx,sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)", path], { encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr.split("\n").slice(-3).join("\n"));
    });
  }
});

/**
 * Valid ONNX models that are large or tangled where whole-model conversion walks them (issue 24):
 * node floods (long chains, wide nodes, many outputs to rename), field floods (value_info entries,
 * attributes, empty repeated fields, unknown fields) and shadowed subgraph names (If branches
 * nested up to four deep, each holding or not its own `w`). Seeded like mutators.ts: case N of a
 * class is the same model on every run. Heavy variants (the sizes from the issue) come once each.
 */
import { Rng } from "../support/rng.js";
import { Bytes, chainModel, floatTensorOf, graphAttr, ifModel, modelOf, nodeProto, valueInfo } from "../support/big-graphs.js";

export type GraphClass = "node flood" | "field flood" | "shadowed names";
export const GRAPH_CLASSES: readonly GraphClass[] = ["node flood", "field flood", "shadowed names"];

export interface GraphCase {
  readonly cls: GraphClass;
  readonly label: string;
  readonly bytes: Uint8Array;
  /** The conversion: `--to` and whether `--weights-only` / `--keep-io-types` are given. */
  readonly to: string;
  readonly flags: readonly string[];
  readonly heavy: boolean;
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.below(xs.length)];
const TARGETS: readonly (readonly [string, readonly string[]])[] = [
  ["float16", []], ["float16", ["--keep-io-types"]], ["bfloat16", []], ["bfloat16", ["--weights-only"]], ["float16", ["--weights-only"]], ["float8e4m3fn", []], ["int4", []],
];

/** x -> Sum(x, x, ... n times) -> y: one node with n inputs. */
function wideNode(n: number): Uint8Array {
  const node = nodeProto("Sum", Array.from({ length: n }, () => "x"), ["y"]);
  return modelOf(new Bytes().len(1, node).len(2, "wide").len(11, valueInfo("x")).len(12, valueInfo("y")));
}

/** x -> n Relu nodes side by side -> n graph outputs (with --keep-io-types, n boundary Casts and renames). */
function manyOutputs(n: number): Uint8Array {
  const g = new Bytes();
  for (let k = 0; k < n; k++) g.len(1, nodeProto("Relu", ["x"], [`y${k}`]));
  g.len(2, "outputs").len(11, valueInfo("x"));
  for (let k = 0; k < n; k++) g.len(12, valueInfo(`y${k}`));
  return modelOf(g);
}

/** x -> Relu -> y with `n` copies of one filler field in the graph, the node or the model. */
function fieldFlood(which: number, n: number): [Uint8Array, string] {
  const fillers: [string, "graph" | "node" | "model", Uint8Array][] = [
    ["empty value_info entries", "graph", Uint8Array.of(13 * 8 + 2, 0)],
    ["empty attributes", "node", Uint8Array.of(5 * 8 + 2, 0)],
    ["empty metadata_props of the graph", "graph", Uint8Array.of(0x82, 0x01, 0)],
    ["empty metadata_props of the model", "model", Uint8Array.of(14 * 8 + 2, 0)],
    ["empty doc_strings of the node", "node", Uint8Array.of(6 * 8 + 2, 0)],
    ["unknown varint fields (1000) in the graph", "graph", Uint8Array.of(0xc0, 0x3e, 0x01)],
    ["value_info entries with an empty type", "graph", Uint8Array.of(13 * 8 + 2, 2, 0x12, 0)],
    ["empty inputs of the node", "node", Uint8Array.of(1 * 8 + 2, 0)],
  ];
  const [what, where, unit] = fillers[which % fillers.length];
  const node = nodeProto("Relu", ["x"], ["y"]);
  if (where === "node") node.repeat(unit, n);
  const g = new Bytes().len(1, node).len(2, "flood").len(11, valueInfo("x")).len(12, valueInfo("y"));
  if (where === "graph") g.repeat(unit, n);
  const model = new Bytes().int(1, 8).len(7, g).len(8, new Bytes().len(1, "").int(2, 13));
  if (where === "model") model.repeat(unit, n);
  return [model.bytes().slice(), `${n} ${what}`];
}

/**
 * y = If(c) over branches nested `depth` deep, + w. Each graph holds its own float32 `w` or not
 * (then it reads the nearest enclosing one); the main graph always does.
 */
function shadowed(rng: Rng, depth: number): [Uint8Array, string] {
  let held = 1;
  const holds: string[] = [];
  const graph = (name: string, level: number, from: string): Bytes => {
    const g = new Bytes();
    const own = rng.below(3) !== 0;
    const op = pick(rng, ["Add", "Mul", "Sub"]);
    if (level < depth) {
      g.len(1, nodeProto(op, [from, "w"], [`${name}_t`], `${name}_op`));
      const then = graph(`${name}_a`, level + 1, `${name}_t`);
      const other = graph(`${name}_b`, level + 1, `${name}_t`);
      g.len(1, nodeProto("If", ["c"], [`${name}_out`], `${name}_if`, [graphAttr("then_branch", then), graphAttr("else_branch", other)]));
    } else g.len(1, nodeProto(op, [from, "w"], [`${name}_out`], `${name}_op`));
    g.len(2, name);
    if (own) {
      g.len(5, floatTensorOf("w", [2], [rng.below(64) / 8 - 4, rng.below(64) / 8 - 4]));
      held++;
      holds.push(name);
    }
    return g.len(12, valueInfo(`${name}_out`));
  };
  const then = graph("a", 1, "x");
  const other = graph("b", 1, "x");
  return [ifModel(then, other, floatTensorOf("w", [2], [0.25, -1])), `If nested ${depth} deep, w held by main and ${held - 1} bodies (${holds.join(" ") || "none"})`];
}

/** Case `index` of class `cls` (light sizes). */
export function graphCase(cls: GraphClass, index: number): GraphCase {
  const rng = new Rng((0x2545f491 * (index + 1) + cls.length * 0x9e3779b1) >>> 0);
  rng.u32();
  const [to, flags] = pick(rng, TARGETS);
  if (cls === "node flood") {
    const kind = rng.below(3);
    const n = pick(rng, [1, 2, 100, 1_000, 20_000]);
    const bytes = kind === 0 ? chainModel(n) : kind === 1 ? wideNode(n) : manyOutputs(n);
    return { cls, label: `${["a chain of", "one Sum with", "side by side,"][kind]} ${n} ${["nodes", "inputs", "outputs"][kind]}`, bytes, to, flags, heavy: false };
  }
  if (cls === "field flood") {
    const [bytes, label] = fieldFlood(rng.below(8), pick(rng, [0, 1, 1_000, 100_000]));
    return { cls, label, bytes, to, flags, heavy: false };
  }
  const [bytes, label] = shadowed(rng, 1 + rng.below(4));
  return { cls, label, bytes, to, flags, heavy: false };
}

/** The sizes of issue 24, once each: the 200,001-node chain, 5,000,000-entry and 10,000,000-attribute floods, 10,000,000 empty inputs. */
export function heavyGraphCases(): GraphCase[] {
  const heavy = (cls: GraphClass, label: string, bytes: Uint8Array, to = "float16", flags: readonly string[] = []): GraphCase => ({ cls, label, bytes, to, flags, heavy: true });
  const flood = (which: number, n: number): GraphCase => {
    const [bytes, label] = fieldFlood(which, n);
    return heavy("field flood", label, bytes);
  };
  return [
    heavy("node flood", "a chain of 200,001 nodes", chainModel(200_001)),
    heavy("node flood", "a chain of 200,001 nodes (float8e4m3fn)", chainModel(200_001), "float8e4m3fn"),
    heavy("node flood", "side by side, 50,000 outputs, io types kept", manyOutputs(50_000), "float16", ["--keep-io-types"]),
    flood(0, 5_000_000),
    flood(1, 10_000_000),
    flood(6, 2_000_000),
    // Past the limit of 1,000,000 values per node: a clean NOT_IMPLEMENTED.
    flood(7, 10_000_000),
  ];
}

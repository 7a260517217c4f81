/**
 * Models onnx.checker refuses are refused before the precision pass (src/io/onnx/graph-check.ts):
 * a cycle, a node input nothing defines, an If without its branches, a Constant with two value
 * attributes (converted, it held `value` twice). Valid neighbours of each still convert; a
 * 1,000,000-node chain is checked in linear time without recursion.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertModelPrecision } from "../../src/onnx/index.js";
import { checkGraphs } from "../../src/io/onnx/graph-check.js";
import { PbMessage } from "../../src/io/onnx/precision/pb.js";
import { throwsCode } from "../support/assertions.js";
import { tensorProto, W } from "../support/protobuf.js";
import { FULL } from "../support/suite.js";

const FLOAT = 1, BOOL = 9;
const value = (name: string, elem: number): W => new W().len(1, name).len(2, new W().len(1, new W().int(1, elem)));
const node = (op: string, inputs: string[], outputs: string[], attrs: W[] = [], name = ""): W => {
  const n = new W();
  for (const i of inputs) n.len(1, i);
  for (const o of outputs) n.len(2, o);
  if (name) n.len(3, name);
  n.len(4, op);
  for (const a of attrs) n.len(5, a);
  return n;
};
const graphAttr = (name: string, g: W): W => new W().len(1, name).len(6, g).int(20, 5);
function graph(nodes: W[], inputs: W[] = [value("x", FLOAT)], outputs: W[] = [value("y", FLOAT)], name = "g"): W {
  const g = new W();
  for (const n of nodes) g.len(1, n);
  g.len(2, name);
  for (const i of inputs) g.len(11, i);
  for (const o of outputs) g.len(12, o);
  return g;
}
const model = (g: W): Uint8Array => new W().int(1, 8).len(8, new W().len(1, "").int(2, 17)).len(7, g).bytes();
const convert = (bytes: Uint8Array): unknown => convertModelPrecision(bytes, { to: "float16" });

test("a cycle and a node out of order are INVALID_DATA naming the node and the value", () => {
  const cycle = graph([node("Relu", ["b"], ["a"], [], "first"), node("Relu", ["a"], ["b"]), node("Relu", ["b"], ["y"])]);
  throwsCode(() => convert(model(cycle)), "INVALID_DATA", /the main graph: node 0 "first" \(Relu\) reads "b", which node 1 makes later: a cycle, or nodes out of topological order/);
  const self = graph([node("Add", ["x", "y"], ["y"])]);
  throwsCode(() => convert(model(self)), "INVALID_DATA", /node 0 \(Add\) reads "y", its own output: a cycle/);
  // The same nodes in order convert.
  assert.equal(typeof convert(model(graph([node("Relu", ["x"], ["a"]), node("Relu", ["a"], ["b"]), node("Relu", ["b"], ["y"])]))), "object");
});

test("an input nothing defines is INVALID_DATA; graph inputs, initializers, enclosing graphs and empty (omitted) inputs define", () => {
  throwsCode(() => convert(model(graph([node("Relu", ["nope"], ["y"])]))), "INVALID_DATA", /reads "nope", which no graph input, initializer or node defines/);
  const init = graph([node("Add", ["x", "w"], ["y"]), node("Clip", ["y", "", "w"], ["z"])]).len(5, tensorProto(FLOAT, [1], "w").len(9, new Uint8Array(4)));
  assert.equal(typeof convert(model(init)), "object");
  // A branch reads x from the enclosing graph; a branch reading what nothing defines is refused with its path.
  const branch = (reads: string): W => graph([node("Relu", [reads], ["t"])], [], [value("t", FLOAT)], "b");
  const ifGraph = (reads: string): W => graph([node("If", ["c"], ["y"], [graphAttr("then_branch", branch(reads)), graphAttr("else_branch", branch("x"))], "if")], [value("x", FLOAT), value("c", BOOL)]);
  assert.equal(typeof convert(model(ifGraph("x"))), "object");
  throwsCode(() => convert(model(ifGraph("ghost"))), "INVALID_DATA", /the main graph: node 0 "if" \(If\) attribute "then_branch": node 0 \(Relu\) reads "ghost", which no graph input/);
});

test("an If without branches, a Loop without body, a Constant with two (or no) values are INVALID_DATA", () => {
  const inputs = [value("x", FLOAT), value("c", BOOL)];
  throwsCode(() => convert(model(graph([node("If", ["c"], ["y"])], inputs))), "INVALID_DATA", /node 0 \(If\) has no then_branch attribute .*If requires then_branch and else_branch/);
  const half = graph([node("If", ["c"], ["y"], [graphAttr("then_branch", graph([], [], [value("x", FLOAT)], "b"))])], inputs);
  throwsCode(() => convert(model(half)), "INVALID_DATA", /has no else_branch attribute/);
  throwsCode(() => convert(model(graph([node("Loop", ["", "c"], ["y"])], inputs))), "INVALID_DATA", /\(Loop\) has no body attribute/);
  const both = node("Constant", [], ["y"], [new W().len(1, "value").len(5, tensorProto(FLOAT, [1]).len(9, new Uint8Array(4))).int(20, 4), new W().len(1, "value_float").float(2, 1.5).int(20, 1)]);
  throwsCode(() => convert(model(graph([both], []))), "INVALID_DATA", /node 0 \(Constant\) has 2 value attributes \(value, value_float\); onnx requires exactly one of value, value_float/);
  throwsCode(() => convert(model(graph([node("Constant", [], ["y"])], []))), "INVALID_DATA", /\(Constant\) has no value attribute/);
  const one = node("Constant", [], ["y"], [new W().len(1, "value_float").float(2, 1.5).int(20, 1)]);
  assert.equal(typeof convert(model(graph([one], []))), "object");
  // Another domain's If or Constant is not ONNX's: left alone.
  assert.doesNotThrow(() => checkGraphs(PbMessage.parse(model(graph([node("Constant", [], ["y"]).len(7, "com.example")], [])), "ModelProto")));
});

/** A chain of n Relu nodes, parsed; and how long checkGraphs takes on it (the best of three). */
function chainCheckMs(n: number): number {
  const g = new W();
  for (let i = 0; i < n; i++) g.len(1, node("Relu", [i === 0 ? "x" : `v${i - 1}`], [i === n - 1 ? "y" : `v${i}`]));
  g.len(2, "chain").len(11, value("x", FLOAT)).len(12, value("y", FLOAT));
  const m = PbMessage.parse(model(g), "ModelProto");
  let best = Infinity;
  for (let k = 0; k < 3; k++) {
    const started = performance.now();
    checkGraphs(m);
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

// Linear time as a ratio measured in this run: ten times the nodes may take at most 30 times as
// long (linear is 10, quadratic 100), so a loaded machine, which slows both runs, cannot fail it.
// The long chain also proves there is no recursion: a recursive walk overflows the stack there.
const CHAIN = FULL ? 1_000_000 : 200_000;
test(`a ${CHAIN.toLocaleString("en")}-node chain is checked in linear time, without recursion`, () => {
  const small = Math.max(chainCheckMs(CHAIN / 10), 1);
  const large = chainCheckMs(CHAIN);
  console.log(`checkGraphs: ${CHAIN / 10} nodes in ${small.toFixed(0)} ms, ${CHAIN} in ${large.toFixed(0)} ms`);
  assert.ok(large < 30 * small, `${CHAIN} nodes took ${large.toFixed(0)} ms, ${CHAIN / 10} took ${small.toFixed(0)} ms`);
});

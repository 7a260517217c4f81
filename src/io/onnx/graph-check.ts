/**
 * What onnx.checker refuses in a model's graphs and the precision pass would otherwise carry into
 * its output (or make worse), checked before conversion: a node input no graph input, initializer,
 * earlier node or enclosing graph defines (a cycle shows as one: a node that reads what a later
 * node makes; the checker demands topological order); an If without then_branch or else_branch, a
 * Loop or Scan without its body; a Constant with other than exactly one value attribute (refused by
 * onnx.checker's full check, its shape inference; with `value` and `value_float` both, the
 * converted model held `value` twice). onnx 1.12 was asked about each case.
 *
 * One pass over each graph, in linear time, with an explicit stack of graphs and no recursion: a
 * graph may hold a million nodes, and subgraphs nest as deep as protobuf's limit allows.
 */
import { TensorcastError } from "../../errors.js";
import type { PbMessage } from "./precision/pb.js";

// GraphProto: node 1, initializer 5, input 11, sparse_initializer 15. NodeProto: input 1,
// output 2, name 3, op_type 4, attribute 5, domain 7. AttributeProto: name 1, g 6, graphs 11.
// SparseTensorProto: values 1 (a TensorProto, name 8).
const CONSTANT_VALUES = new Set(["value", "value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings", "sparse_value"]);
const REQUIRED_GRAPHS: Readonly<Record<string, readonly string[]>> = { If: ["then_branch", "else_branch"], Loop: ["body"], Scan: ["body"] };
const QUOTE_LIMIT = 80;

interface Pending {
  readonly graph: PbMessage;
  /** The names each enclosing graph defines, outermost first. */
  readonly outer: readonly Set<string>[];
  /** Where the graph is, for messages: "the main graph", "node "n" (If) attribute then_branch". */
  readonly where: string;
}

const quote = (s: string): string => JSON.stringify(s.length > QUOTE_LIMIT ? `${s.slice(0, QUOTE_LIMIT)}...` : s);

/**
 * Throws unless every graph of `model` (the main graph and every subgraph in node attributes)
 * passes the checks above.
 * @example checkGraphs(PbMessage.parse(bytes, "ModelProto")) // throws for a cycle
 * @throws TensorcastError INVALID_DATA naming the graph, the node and what is wrong.
 */
export function checkGraphs(model: PbMessage): void {
  const main = model.sub(7, "GraphProto");
  if (!main) return;
  const stack: Pending[] = [{ graph: main, outer: [], where: "the main graph" }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const { graph, outer, where } = next;
    const defined = new Set<string>();
    for (const v of graph.subs(11, "ValueInfoProto")) defined.add(v.string(1));
    for (const t of graph.subs(5, "TensorProto")) defined.add(t.string(8));
    for (const s of graph.subs(15, "SparseTensorProto")) defined.add(s.sub(1, "TensorProto")?.string(8) ?? "");
    // Nodes are read with peek (parsed, not kept): a million-node graph's parses are never all
    // held at once, here or in the precision pass after (precision/pb.ts).
    const nodeFields = graph.all(1);
    /**
     * The first node from `from` on that makes `name`, for the message about a value read before
     * it is made (a cycle or an order onnx refuses) or never made: looked up only on that error,
     * so a valid graph's nodes are each parsed once.
     */
    const madeLater = (name: string, from: number): number | undefined => {
      for (let k = from; k < nodeFields.length; k++) if (graph.peek(nodeFields[k], "NodeProto").strings(2).includes(name)) return k;
      return undefined;
    };
    const scope = [...outer, defined];
    for (let i = 0; i < nodeFields.length; i++) {
      const n = graph.peek(nodeFields[i], "NodeProto");
      const op = n.string(4);
      const node = `${where}: node ${i}${n.string(3) ? ` ${quote(n.string(3))}` : ""} (${op})`;
      for (const input of n.strings(1)) {
        if (input === "" || scope.some((s) => s.has(input))) continue;
        const by = madeLater(input, i);
        throw new TensorcastError(
          "INVALID_DATA",
          by === undefined
            ? `${node} reads ${quote(input)}, which no graph input, initializer or node defines (onnx.checker refuses it)`
            : by === i
              ? `${node} reads ${quote(input)}, its own output: a cycle (onnx.checker refuses it)`
              : `${node} reads ${quote(input)}, which node ${by} makes later: a cycle, or nodes out of topological order (onnx.checker refuses both)`,
        );
      }
      const attributes = n.subs(5, "AttributeProto");
      const names = attributes.map((a) => a.string(1));
      const domain = n.string(7);
      if (domain === "" || domain === "ai.onnx") {
        const needs = REQUIRED_GRAPHS[op];
        if (needs !== undefined) {
          for (const a of needs) {
            if (!names.includes(a)) throw new TensorcastError("INVALID_DATA", `${node} has no ${a} attribute (onnx.checker refuses it: ${op} requires ${needs.join(" and ")})`);
          }
        }
        if (op === "Constant") {
          const values = names.filter((a) => CONSTANT_VALUES.has(a));
          if (values.length !== 1) {
            throw new TensorcastError(
              "INVALID_DATA",
              `${node} has ${values.length === 0 ? "no value attribute" : `${values.length} value attributes (${values.join(", ")})`}; ` +
                `onnx requires exactly one of ${[...CONSTANT_VALUES].join(", ")} (onnx.checker's full check, shape inference, refuses others)`,
            );
          }
        }
      }
      attributes.forEach((a, k) => {
        const sub = `${node} attribute ${quote(names[k])}`;
        // A subgraph sees the names its node's graph defines (all of them, so order within the
        // enclosing graph is not checked across the boundary) and the enclosing graphs'.
        const g = a.sub(6, "GraphProto");
        if (g) stack.push({ graph: g, outer: scope, where: sub });
        a.subs(11, "GraphProto").forEach((gs, j) => stack.push({ graph: gs, outer: scope, where: `${sub}[${j}]` }));
      });
      for (const o of n.strings(2)) if (o !== "") defined.add(o);
    }
  }
}

/**
 * onnxruntime's dynamic quantizer does not quantize Gemm: before anything else it rewrites each
 * Gemm it can as MatMul (+ Add of C), then quantizes the MatMul (ONNXModel.replace_gemm_with_matmul,
 * run by ONNXQuantizer when not static). This is that rewrite, with the names and the order it
 * writes:
 *
 * - only a Gemm of the standard domain with alpha = 1, beta = 1 and transA = 0 is rewritten; any
 *   other stays as it is, float (listed, with the attribute that keeps it);
 * - transB = 1 and B an initializer (of this graph or an enclosing one): B is replaced by its
 *   transpose under the same name (numpy_helper.from_array's fields: dims, data_type, name,
 *   raw_data), moved to the end of that graph's initializers, and its graph input, if any, dropped;
 *   transB = 1 and B any other value: a Transpose `<Gemm>_Transpose` writes `<B>_Transposed`;
 * - MatMul(A, B) `<Gemm>_MatMul` writes Y, or `Y_MatMul` when there is a C, then Add(Y_MatMul, C)
 *   `<Gemm>_Add` writes Y (an unnamed Gemm gives unnamed nodes); C's broadcast is Gemm's
 *   unidirectional one to [M, N], which Add's multidirectional one gives the same result for.
 *
 * Where onnxruntime's rewrite writes a wrong model, this one leaves the Gemm float instead, and
 * says why: a transposed B that another node (or a graph output) also reads (onnxruntime
 * transposes it under them too), and a B it cannot read here (its data external, in memory). An
 * empty C name is no C (onnxruntime would add an Add reading ""). A second Gemm transposing the
 * same non-constant B reads the first one's `<B>_Transposed` (onnxruntime writes that name twice).
 */
import { transposeMatrices } from "../../../kernels/quant/checkpoint.js";
import type { PbField, PbMessage } from "../precision/pb.js";
import { bodiesOf, floatOf } from "../precision/graph.js";
import { insertOrdered, makeNode, nodeLabel, readInitializer } from "./edit.js";
import { dropGraphInput, findInitializer } from "./matmul-nbits.js";
import type { QuantizeReport } from "./report.js";
import type { QuantizeStorage } from "./storage.js";

/** AttributeProto.type FLOAT and INT. */
const FLOAT_ATTR = 1;
const INT_ATTR = 2;

/** The nodes the rewrite made from a Gemm, each mapped to that Gemm's label (for the summary). */
export type GemmOrigins = Map<PbMessage, string>;

/**
 * Rewrites the Gemms of `graph` and of the bodies `descend` says the quantizer enters (see the
 * file comment); the Gemms it leaves go to `report.left`. Returns the MatMuls it made.
 */
export function replaceGemmWithMatMul(graph: PbMessage, report: QuantizeReport, storage: QuantizeStorage, descend: (node: PbMessage) => boolean): GemmOrigins {
  const origins: GemmOrigins = new Map();
  const readers = countReaders(graph);
  const walk = (g: PbMessage, stack: PbMessage[]): void => {
    const transposed = new Set<string>();
    // A snapshot: the rewrite edits the fields (B moved to the end of its graph's initializers).
    for (const f of g.all(1)) {
      const n = g.message(f, "NodeProto");
      if (descend(n)) for (const body of bodiesOf(n)) walk(body, [...stack, body]);
      const made = n.string(4) === "Gemm" && isDefaultDomain(n.string(7)) ? rewrite(n, stack, transposed, readers, report, storage) : undefined;
      if (!made) continue;
      for (const m of made) if (m.string(4) === "MatMul") origins.set(m, nodeLabel(n));
      g.fields.splice(g.fields.indexOf(f), 1, ...made.map((m): PbField => ({ no: 1, wire: 2, data: new Uint8Array(0), msg: m })));
    }
  };
  walk(graph, [graph]);
  return origins;
}

function isDefaultDomain(d: string): boolean {
  return d === "" || d === "ai.onnx";
}

/** The nodes that replace Gemm `n`, or undefined (after saying why in `report`) when it stays. */
function rewrite(n: PbMessage, stack: readonly PbMessage[], transposed: Set<string>, readers: ReadonlyMap<string, number>, report: QuantizeReport, storage: QuantizeStorage): PbMessage[] | undefined {
  const label = nodeLabel(n);
  const keep = (why: string): undefined => {
    report.left.push({ node: label, opType: "Gemm", reason: `${why}; onnxruntime's dynamic quantizer rewrites a Gemm as MatMul (then quantized) only with alpha = beta = 1 and transA = 0` });
    return undefined;
  };
  let alpha = 1;
  let beta = 1;
  let transA = 0;
  let transB = 0;
  for (const a of n.subs(5, "AttributeProto")) {
    const name = a.string(1);
    if (name === "alpha" || name === "beta") {
      if (a.int(20) !== FLOAT_ATTR) return keep(`its ${name} is not a float`);
      const x = floatOf(a.all(2).at(-1));
      if (name === "alpha") alpha = x;
      else beta = x;
    } else if (name === "transA" || name === "transB") {
      if (a.int(20) !== INT_ATTR) return keep(`its ${name} is not an int`);
      const x = Number(a.varint(3) ?? 0n);
      if (name === "transA") transA = x;
      else transB = x;
    }
  }
  if (alpha !== 1) return keep(`alpha is ${alpha}`);
  if (beta !== 1) return keep(`beta is ${beta}`);
  if (transA !== 0) return keep(`transA is ${transA}`);
  const inputs = n.strings(1);
  const outputs = n.strings(2);
  if (inputs.length < 2 || outputs.length < 1) return keep("it has fewer than two inputs or no output");
  const name = n.string(3);
  const made: PbMessage[] = [];
  let b = inputs[1];
  if (transB === 1) {
    const found = findInitializer(b, stack);
    if (found) {
      if ((readers.get(b) ?? 0) > 1) return keep(`B (${b}, transB = 1) is read by another node or is a graph output, which would see it transposed too`);
      const t = readInitializer(found.field, storage.readExternal);
      if (typeof t === "string") return keep(`B (${b}) cannot be read to transpose it: ${t}`);
      if (t.shape.length !== 2) return keep(`B (${b}) is ${t.shape.length}-D, not 2-D`);
      if (t.dtype.bits % 8 !== 0 || t.dtype.array === "Array") return keep(`B (${b}) is ${t.dtype.name}`);
      const [rows, cols] = t.shape;
      const raw = transposeMatrices(t.bytes(), 1, rows, cols, t.dtype.bits / 8);
      found.graph.fields = found.graph.fields.filter((f) => f !== found.field);
      dropGraphInput(found.graph, b);
      insertOrdered(found.graph, { no: 5, wire: 2, data: new Uint8Array(0), msg: storage.store(b, t.dtype.onnx, [cols, rows], raw) });
    } else {
      const from = b;
      b = `${b}_Transposed`;
      if (!transposed.has(b)) {
        transposed.add(b);
        made.push(makeNode("Transpose", [from], [b], name ? `${name}_Transpose` : "", ""));
      }
    }
  }
  const hasC = inputs.length > 2 && inputs[2] !== "";
  const y = outputs[0];
  made.push(makeNode("MatMul", [inputs[0], b], [hasC ? `${y}_MatMul` : y], name ? `${name}_MatMul` : "", ""));
  if (hasC) made.push(makeNode("Add", [`${y}_MatMul`, inputs[2]], [y], name ? `${name}_Add` : "", ""));
  return made;
}

/** How many times each name is read by a node input (in any graph of the model) or named as a graph output. */
function countReaders(g: PbMessage, counts = new Map<string, number>()): Map<string, number> {
  const add = (s: string): void => {
    if (s !== "") counts.set(s, (counts.get(s) ?? 0) + 1);
  };
  for (const v of g.subs(12, "ValueInfoProto")) add(v.string(1));
  for (const n of g.subs(1, "NodeProto")) {
    for (const s of n.strings(1)) add(s);
    for (const body of bodiesOf(n)) countReaders(body, counts);
  }
  return counts;
}

/**
 * The q4 variant, as onnxruntime's MatMulNBitsQuantizer (DefaultWeightOnlyQuantizer, QOperator
 * format) makes it: every MatMul whose B is a 2-D float32 initializer of its graph or an enclosing
 * one becomes a com.microsoft MatMulNBits reading `B_Q4` [N, blocks, blockSize / 2], `B_scales`
 * [N, blocks] and, asymmetric, `B_zero_points`; the new initializers are appended to the graph
 * holding B, B's graph input (if any) is dropped, "com.microsoft" is imported at version 1, and
 * every initializer no node reads any more is removed (its clean_initializers).
 */
import { mlasQuantize4 } from "../../../kernels/quant/mlas-blockwise.js";
import type { PbField, PbMessage } from "../precision/pb.js";
import { bodiesOf } from "../precision/graph.js";
import { cleanInitializers, float32Bytes, insertOrdered, intAttribute, makeNode, nodeLabel, readInitializer, rawTensor, setOpsetImport } from "./edit.js";
import type { QuantizeReport } from "./report.js";

/** The q4 settings. */
export interface NBitsSettings {
  readonly blockSize: number;
  readonly symmetric: boolean;
  /** Written only when non-zero, as onnxruntime does. */
  readonly accuracyLevel: number;
}

const UINT8 = 2;
const FLOAT = 1;

/** Rewrites `model` in place (see the file comment), counting into `report`. */
export function matMulNBitsPass(model: PbMessage, graph: PbMessage, s: NBitsSettings, report: QuantizeReport): void {
  setOpsetImport(model, "com.microsoft", 1);
  const done = new Map<PbField, Quantized>();
  const walk = (g: PbMessage, stack: PbMessage[]): void => {
    for (const f of g.fields) {
      if (f.no !== 1) continue;
      const node = g.message(f, "NodeProto");
      for (const body of bodiesOf(node)) walk(body, [...stack, body]);
      if (node.string(4) !== "MatMul" || !isDefaultDomain(node.string(7))) continue;
      const q = quantizeMatMul(node, stack, s, done);
      if (typeof q === "string") report.left.push({ node: nodeLabel(node), opType: "MatMul", reason: q });
      else {
        f.msg = q;
        report.quantized++;
      }
    }
  };
  walk(graph, [graph]);
  cleanInitializers(graph);
}

function isDefaultDomain(d: string): boolean {
  return d === "" || d === "ai.onnx";
}

/** The initializer field named `name` in the innermost graph of `stack` that has one, with that graph. */
export function findInitializer(name: string, stack: readonly PbMessage[]): { field: PbField; graph: PbMessage } | undefined {
  for (let k = stack.length - 1; k >= 0; k--) {
    const g = stack[k];
    for (const f of g.fields) if (f.no === 5 && g.message(f, "TensorProto").string(8) === name) return { field: f, graph: g };
  }
  return undefined;
}

/** Removes the graph input declaring `name` (the first), as the quantizer does for B. */
export function dropGraphInput(g: PbMessage, name: string): void {
  const at = g.fields.findIndex((f) => f.no === 11 && g.message(f, "ValueInfoProto").string(1) === name);
  if (at >= 0) g.fields.splice(at, 1);
}

/** What a quantized B became: the MatMulNBits inputs after A, and K and N. */
interface Quantized {
  readonly inputs: readonly string[];
  readonly k: number;
  readonly n: number;
}

function quantizeMatMul(node: PbMessage, stack: readonly PbMessage[], s: NBitsSettings, done: Map<PbField, Quantized>): PbMessage | string {
  const inputs = node.strings(1);
  const found = inputs.length === 2 ? findInitializer(inputs[1], stack) : undefined;
  if (!found) return "B is not an initializer";
  let q = done.get(found.field);
  if (!q) {
    const t = readInitializer(found.field);
    if (typeof t === "string") return `B: ${t}`;
    if (t.shape.length !== 2) return `B is ${t.shape.length}-D, not 2-D`;
    if (t.dtype.name !== "float32") return `B is ${t.dtype.name}; q4 quantizes float32 weights`;
    const [k, n] = t.shape;
    const w = mlasQuantize4(t.data as Float32Array, k, n, s.blockSize, s.symmetric);
    const blocks = Math.ceil(k / s.blockSize);
    const b = inputs[1];
    const added = [
      rawTensor(`${b}_Q4`, UINT8, [n, blocks, s.blockSize / 2], w.packed),
      rawTensor(`${b}_scales`, FLOAT, [n, blocks], float32Bytes(w.scales)),
    ];
    if (w.zeroPoints) added.push(rawTensor(`${b}_zero_points`, UINT8, [n, Math.ceil(blocks / 2)], w.zeroPoints));
    dropGraphInput(found.graph, b);
    for (const a of added) insertOrdered(found.graph, { no: 5, wire: 2, data: new Uint8Array(0), msg: a });
    q = { inputs: added.map((a) => a.string(8)), k, n };
    done.set(found.field, q);
  }
  const attrs = [intAttribute("K", q.k), intAttribute("N", q.n), intAttribute("bits", 4), intAttribute("block_size", s.blockSize)];
  if (s.accuracyLevel) attrs.push(intAttribute("accuracy_level", s.accuracyLevel));
  const name = node.string(3);
  return makeNode("MatMulNBits", [inputs[0], ...q.inputs], [node.strings(2)[0]], name ? `${name}_Q4` : "", "com.microsoft", attrs);
}

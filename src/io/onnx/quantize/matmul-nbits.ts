/**
 * The weight-only variants q4 and bnb4. q4 as onnxruntime's MatMulNBitsQuantizer
 * (DefaultWeightOnlyQuantizer, QOperator format) makes it: every MatMul whose B is a 2-D float32 initializer of its graph or an enclosing
 * one (or float16: its scales are float16 then, as MLAS's MLFloat16 quantizer makes them) becomes a com.microsoft MatMulNBits reading `B_Q4` [N, blocks, blockSize / 2], `B_scales`
 * [N, blocks] and, asymmetric, `B_zero_points`; the new initializers are appended to the graph
 * holding B, B's graph input (if any) is dropped, "com.microsoft" is imported at version 1, and
 * every initializer no node reads any more is removed (its clean_initializers).
 */
import { mlasQuantize4 } from "../../../kernels/quant/mlas-blockwise.js";
import type { PbField, PbMessage } from "../precision/pb.js";
import type { Tensor } from "../../../tensor.js";
import { bodiesOf } from "../precision/graph.js";
import { dtype } from "../../../dtype/table.js";
import { convert } from "../../../kernels/convert.js";
import { initializerHeader, typeName } from "./edit.js";
import { cleanInitializers, float32Bytes, insertOrdered, intAttribute, makeNode, nodeLabel, readInitializer, setOpsetImport } from "./edit.js";
import type { QuantizeReport } from "./report.js";
import { IN_MEMORY, type QuantizeStorage } from "./storage.js";

/** The q4 settings. */
export interface NBitsSettings {
  readonly blockSize: number;
  readonly symmetric: boolean;
  /** Written only when non-zero, as onnxruntime does. */
  readonly accuracyLevel: number;
}

const UINT8 = 2;
const FLOAT = 1;
const FLOAT16 = 10;

/** A float16 tensor's values as float32 (exact). */
function float32Values(t: Tensor): Float32Array {
  const out = new Float32Array(t.size);
  convert(t.data, t.dtype, out, dtype("float32"), t.size, { saturate: false, roundMode: "up" });
  return out;
}

/** Little-endian float16 bytes of float32 values that are float16 values. */
function float16Bytes(values: Float32Array): Uint8Array {
  const out = new Uint16Array(values.length);
  convert(values, dtype("float32"), out, dtype("float16"), values.length, { saturate: false, roundMode: "up" });
  return new Uint8Array(out.buffer);
}

/**
 * How one weight-only quantizer rewrites a MatMul: the operator, the suffix its node name gets,
 * and the initializers and attributes made from B (a 2-D float32 tensor) or why it cannot.
 */
export interface WeightRule {
  readonly opType: string;
  readonly nameSuffix: string;
  /** B may be float16 as well as float32. */
  readonly acceptsFloat16: boolean;
  quantize(b: Tensor, name: string, store: QuantizeStorage["store"]): { tensors: PbMessage[]; attributes: PbMessage[] } | string;
}

/** MatMulNBitsQuantizer's rule (see the file comment). */
export function nBitsRule(s: NBitsSettings): WeightRule {
  return {
    opType: "MatMulNBits",
    nameSuffix: "_Q4",
    acceptsFloat16: true,
    quantize(t, b, store) {
      const [k, n] = t.shape;
      // A float16 B keeps float16 scales (MatMulNBitsQuantizer makes them in B's type).
      const half = t.dtype.name === "float16";
      const w = mlasQuantize4(half ? float32Values(t) : (t.data as Float32Array), k, n, s.blockSize, s.symmetric, half ? "float16" : "float32");
      const blocks = Math.ceil(k / s.blockSize);
      const tensors = [
        store(`${b}_Q4`, UINT8, [n, blocks, s.blockSize / 2], w.packed),
        half ? store(`${b}_scales`, FLOAT16, [n, blocks], float16Bytes(w.scales)) : store(`${b}_scales`, FLOAT, [n, blocks], float32Bytes(w.scales)),
      ];
      if (w.zeroPoints) tensors.push(store(`${b}_zero_points`, UINT8, [n, Math.ceil(blocks / 2)], w.zeroPoints));
      const attributes = [intAttribute("K", k), intAttribute("N", n), intAttribute("bits", 4), intAttribute("block_size", s.blockSize)];
      if (s.accuracyLevel) attributes.push(intAttribute("accuracy_level", s.accuracyLevel));
      return { tensors, attributes };
    },
  };
}

/**
 * Rewrites `model` in place: each MatMul whose B is a 2-D float32 initializer of its graph or an
 * enclosing one becomes `rule.opType` in the com.microsoft domain (imported at version 1); the new
 * initializers are appended to the graph holding B, B's graph input (if any) is dropped, and every
 * initializer no node reads any more is removed. A B read by several MatMuls is quantized once.
 */
export function matMulWeightPass(model: PbMessage, graph: PbMessage, rule: WeightRule, report: QuantizeReport, storage: QuantizeStorage = IN_MEMORY): void {
  setOpsetImport(model, "com.microsoft", 1);
  const done = new Map<PbField, Made>();
  const walk = (g: PbMessage, stack: PbMessage[]): void => {
    for (const f of g.fields) {
      if (f.no !== 1) continue;
      const node = g.message(f, "NodeProto");
      for (const body of bodiesOf(node)) walk(body, [...stack, body]);
      if (!isDefaultDomain(node.string(7))) continue;
      const op = node.string(4);
      if (WEIGHT_OPS_LEFT.has(op)) {
        report.left.push({ node: nodeLabel(node), opType: op, reason: `${rule.opType} takes MatMul only; onnxruntime's quantizer leaves ${op} float too` });
        continue;
      }
      if (op !== "MatMul") continue;
      const q = quantizeMatMul(node, stack, rule, done, storage);
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

/** Operators with a weight that the weight-only modes leave float (listed in the summary). */
const WEIGHT_OPS_LEFT = new Set(["Gemm", "Conv", "ConvTranspose"]);

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

/** Removes the graph input declaring `name` (the first), as the quantizers do for B. */
export function dropGraphInput(g: PbMessage, name: string): void {
  const at = g.fields.findIndex((f) => f.no === 11 && g.message(f, "ValueInfoProto").string(1) === name);
  if (at >= 0) g.fields.splice(at, 1);
}

/** What a quantized B became: the operator's inputs after A, and its attributes. */
interface Made {
  readonly inputs: readonly string[];
  readonly attributes: readonly PbMessage[];
}

function quantizeMatMul(node: PbMessage, stack: readonly PbMessage[], rule: WeightRule, done: Map<PbField, Made>, storage: QuantizeStorage): PbMessage | string {
  const inputs = node.strings(1);
  const found = inputs.length === 2 ? findInitializer(inputs[1], stack) : undefined;
  if (!found) return "B is not an initializer";
  let made = done.get(found.field);
  if (!made) {
    // The header first: a weight that cannot be quantized is never read.
    const { dataType, dims } = initializerHeader(found.field);
    if (dims.length !== 2) return `B is ${dims.length}-D, not 2-D`;
    if (dataType !== FLOAT && !(rule.acceptsFloat16 && dataType === FLOAT16)) return `B is ${typeName(dataType)}; tensorcast quantizes ${rule.acceptsFloat16 ? "float32 and float16" : "float32"} weights`;
    const t = readInitializer(found.field, storage.readExternal);
    if (typeof t === "string") return `B: ${t}`;
    const q = rule.quantize(t, inputs[1], storage.store);
    if (typeof q === "string") return q;
    dropGraphInput(found.graph, inputs[1]);
    for (const a of q.tensors) insertOrdered(found.graph, { no: 5, wire: 2, data: new Uint8Array(0), msg: a });
    made = { inputs: q.tensors.map((a) => a.string(8)), attributes: q.attributes };
    done.set(found.field, made);
  }
  const name = node.string(3);
  return makeNode(rule.opType, [inputs[0], ...made.inputs], [node.strings(2)[0]], name ? `${name}${rule.nameSuffix}` : "", "com.microsoft", made.attributes);
}

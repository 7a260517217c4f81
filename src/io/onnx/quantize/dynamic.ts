/**
 * The int8 / uint8 variants, as onnxruntime's dynamic quantization makes them (ONNXQuantizer,
 * QuantizationMode.IntegerOps, activations uint8 through DynamicQuantizeLinear, MatMulConstBOnly,
 * per tensor or per channel), in the main graph:
 *
 * - Gemm: first rewritten as MatMul (+ Add of C) where onnxruntime's rewrite takes it (gemm.ts),
 *   the others left float and listed; the MatMuls made are quantized as any other;
 * - MatMul with an initializer B (float32) -> DynamicQuantizeLinear of A (`A_QuantizeLinear`, one
 *   per tensor, shared) unless A is quantized already, MatMulInteger(A_q, B_quantized, A_zp, B_zp)
 *   -> `Y_output_quantized`, Cast to float, Mul of the two scales (`sA_sB_mul`, shared), Mul -> Y;
 * - Conv with an initializer W: the same with ConvInteger (the attributes kept), and a bias added
 *   through Reshape(bias, [1, -1, 1, ...]) and an Add `Y_bias_add`;
 * - Gather of an initializer: the table quantized as an activation (uint8, min / max), the Gather
 *   reads and writes quantized values (`Y_quantized`), which a following MatMul takes as they are;
 *   Transpose of a quantized value stays quantized;
 * - any other node reading a quantized value gets a DequantizeLinear (`X_DequantizeLinear`) first;
 *   graph outputs too.
 *
 * Weights: `W_quantized` (raw), `W_scale` and `W_zero_point` (typed fields) by quant_utils'
 * rule (src/kernels/quant/ort-minmax.ts); int8 weights symmetric, uint8 asymmetric; per channel
 * along the last axis for MatMul, the first for Conv. The producer becomes "onnx.quantize" 0.1.0.
 * Subgraphs (EnableSubgraph): the bodies of If and Loop are quantized by a pass of their own with
 * this one as parent, as ONNXQuantizer's sub-quantizers do: a weight or value of an enclosing
 * graph is quantized in that graph (its initializers, its DynamicQuantizeLinear before the node),
 * and the node is made again by make_node (attributes sorted by name).
 *
 * The value_info of onnx's shape inference, which onnxruntime runs on the float model first, is
 * added for the operators shape-infer.ts knows (the metadata onnx.infer = onnxruntime.quant marks
 * the file shape-inferred, as onnxruntime's does). Not done: Scan bodies (left float: Scan has attributes make_node would write anew), Attention, LSTM and
 * EmbedLayerNormalization (left float, listed).
 */
import { minMax, ortQuantizeValues, ortScaleZeroPoint, type OrtIntType, type OrtQuantParams } from "../../../kernels/quant/ort-minmax.js";
import { PbMessage, type PbField } from "../precision/pb.js";
import { bodiesOf } from "../precision/graph.js";
import { utf8Bytes } from "../precision/pb.js";
import { cleanInitializers, initializerHeader, insertOrdered, intAttribute, makeNode, markReloaded, nodeLabel, readInitializer, typeName } from "./edit.js";
import { IN_MEMORY, type QuantizeStorage } from "./storage.js";
import { addInferredValueInfo } from "./shape-infer.js";
import { replaceGemmWithMatMul, type GemmOrigins } from "./gemm.js";
import { findInitializer } from "./matmul-nbits.js";
import type { QuantizeReport } from "./report.js";

/** The dynamic quantization settings. */
export interface DynamicSettings {
  readonly weightType: OrtIntType;
  readonly perChannel: boolean;
}

/** A value held quantized: its quantized name, scale and zero point names. */
interface QValue {
  readonly q: string;
  readonly scale: string;
  readonly zp: string;
}

const ELEM = { int8: 3, uint8: 2 } as const;
const FLOAT = 1;
const LEFT_FLOAT_OPS = new Set(["Attention", "LSTM", "EmbedLayerNormalization"]);
/** AttributeProto.type GRAPH. */
const GRAPH = 5;

/** Rewrites `model` in place (see the file comment), counting into `report`. */
export function dynamicPass(model: PbMessage, graph: PbMessage, s: DynamicSettings, report: QuantizeReport, storage: QuantizeStorage = IN_MEMORY): void {
  // save_and_reload_model_with_shape_infer marks the model as shape-inferred (quant_utils.model_has_infer_metadata).
  const marked = model.subs(14, "StringStringEntryProto").some((e) => e.string(1) === "onnx.infer");
  // onnxruntime shape-infers the float model first unless it is marked (BaseQuantizer), rewrites
  // the Gemms (gemm.ts), then infers again, which keeps the entries there and appends those of
  // the new values (`Y_MatMul`, `B_Transposed`) after them.
  if (!marked) addInferredValueInfo(graph);
  const origins = replaceGemmWithMatMul(graph, report, storage, entersBodies);
  addInferredValueInfo(graph);
  // That second inference is a save through external data and a reload, after the rewrite: the
  // initializers it moved out come back with data_location DEFAULT set, the transposed Bs too.
  markReloaded(graph, storage.reloaded);
  new DynamicPass(graph, s, report, storage, origins).run();
  cleanInitializers(graph);
  for (const [no, value] of [[2, "onnx.quantize"], [3, "0.1.0"]] as const) {
    model.remove(no);
    insertOrdered(model, { no, wire: 2, data: utf8Bytes(value) });
  }
  if (!marked) {
    const entry = new PbMessage([], "StringStringEntryProto").addString(1, "onnx.infer").addString(2, "onnxruntime.quant");
    insertOrdered(model, { no: 14, wire: 2, data: new Uint8Array(0), msg: entry });
  }
}

/** The nodes whose bodies the pass quantizes (withQuantizedBodies): If and Loop of the standard domain. */
function entersBodies(n: PbMessage): boolean {
  const domain = n.string(7);
  return (domain === "" || domain === "ai.onnx") && (n.string(4) === "If" || n.string(4) === "Loop");
}

class DynamicPass {
  private readonly quantized = new Map<string, QValue>();
  private readonly newNodes: PbMessage[] = [];
  private readonly nodeNames = new Set<string>();
  private readonly dql = new Map<string, QValue>();

  /** Names this graph defines (ONNXQuantizer's contains_tensor): its inputs, outputs, value_info and node outputs. */
  private readonly local = new Set<string>();

  /** `parent`: the pass of the graph holding this one (a body of If / Loop), as ONNXQuantizer's sub-quantizer has one. */
  constructor(
    private readonly g: PbMessage, private readonly s: DynamicSettings, private readonly report: QuantizeReport, private readonly storage: QuantizeStorage,
    private readonly origins: GemmOrigins, private readonly parent?: DynamicPass,
  ) {}

  run(): void {
    const nodes = this.g.subs(1, "NodeProto");
    for (const no of [11, 12, 13]) for (const v of this.g.subs(no, "ValueInfoProto")) this.local.add(v.string(1));
    for (const n of nodes) for (const o of n.strings(2)) this.local.add(o);
    for (let n of nodes) {
      const op = n.string(4);
      const domain = n.string(7);
      const standard = domain === "" || domain === "ai.onnx";
      let done = false;
      if (bodiesOf(n).length > 0) {
        const rebuilt = entersBodies(n) ? this.withQuantizedBodies(n) : undefined;
        if (rebuilt) n = rebuilt;
        else this.report.left.push({ node: nodeLabel(n), opType: op, reason: "its subgraphs are not quantized" });
      }
      if (standard && op === "MatMul") done = this.integerOp(n, "MatMulInteger", -1);
      else if (standard && op === "Conv") done = this.integerOp(n, "ConvInteger", 0);
      else if (standard && op === "Gather") done = this.gather(n);
      else if (standard && op === "Transpose") done = this.direct(n);
      else if (LEFT_FLOAT_OPS.has(op)) this.report.left.push({ node: nodeLabel(n), opType: op, reason: `${op} is not quantized by tensorcast yet` });
      if (done) this.report.quantized++;
      else this.keepFloat(n);
    }
    for (const v of this.g.subs(12, "ValueInfoProto")) {
      const d = this.dequantize(v.string(1));
      if (d) this.newNodes.push(d);
    }
    const fields: PbField[] = [];
    let placed = false;
    for (const f of this.g.fields) {
      if (f.no !== 1) fields.push(f);
      else if (!placed) {
        for (const n of this.newNodes) fields.push({ no: 1, wire: 2, data: new Uint8Array(0), msg: n });
        placed = true;
      }
    }
    this.g.fields = fields;
  }

  private push(n: PbMessage): void {
    this.newNodes.push(n);
    if (n.string(3) !== "") this.nodeNames.add(n.string(3));
  }

  private keepFloat(n: PbMessage): void {
    // A body reading a value this graph holds quantized (a Gather's output) needs it float too.
    const reads = [...n.strings(1)];
    const bodyReads = (g: PbMessage): void => {
      for (const m of g.subs(1, "NodeProto")) {
        reads.push(...m.strings(1));
        for (const b of bodiesOf(m)) bodyReads(b);
      }
    };
    for (const b of bodiesOf(n)) bodyReads(b);
    for (const input of reads) {
      const d = this.dequantize(input);
      if (d) this.push(d);
    }
    this.push(n);
  }

  /** A DequantizeLinear back to `name` when it is held quantized and nothing made the float value yet. */
  private dequantize(name: string): PbMessage | undefined {
    const q = this.quantized.get(name);
    if (!q) return undefined;
    if (this.newNodes.some((n) => n.strings(2).includes(name))) return undefined;
    return makeNode("DequantizeLinear", [q.q, q.scale, q.zp], [name], `${name}_DequantizeLinear`, "");
  }

  /**
   * ONNXQuantizer.quantize_node_with_sub_graph: each body quantized by a pass of its own whose
   * parent is this one (weights and values of this graph quantized here, DynamicQuantizeLinear of
   * them added here, before the node), and the node made again by onnx.helper.make_node: inputs,
   * outputs, name, the attributes sorted by name (else_branch before then_branch), no doc_string.
   * Undefined when the node has an attribute other than a graph (make_node would write it anew).
   */
  private withQuantizedBodies(n: PbMessage): PbMessage | undefined {
    const attributes = n.subs(5, "AttributeProto");
    if (attributes.some((a) => a.int(20) !== GRAPH || !a.sub(6, "GraphProto"))) return undefined;
    const made = attributes.map((a) => {
      const body = a.sub(6, "GraphProto")!;
      new DynamicPass(body, this.s, this.report, this.storage, this.origins, this).run();
      return new PbMessage([], "AttributeProto").addString(1, a.string(1)).addMessage(6, body).addVarint(20, GRAPH);
    });
    return makeNode(n.string(4), n.strings(1), n.strings(2), n.string(3), "", made);
  }

  /** The initializer `name` of this graph, or of an enclosing one when this graph does not define the name. */
  private lookup(name: string): { field: PbField; owner: DynamicPass } | undefined {
    const found = findInitializer(name, [this.g]);
    if (found) return { field: found.field, owner: this };
    return this.parent && !this.local.has(name) ? this.parent.lookup(name) : undefined;
  }

  private addInitializer(t: PbMessage): void {
    insertOrdered(this.g, { no: 5, wire: 2, data: new Uint8Array(0), msg: t });
  }

  /** An initializer quantized per tensor or per channel (base_quantizer's quantize_initializer_impl / per_channel_impl). */
  private quantizeInitializer(name: string, t: OrtIntType, symmetric: boolean, axis: number | undefined): QValue | string {
    const known = this.quantized.get(name);
    if (known) return known;
    const found = findInitializer(name, [this.g]);
    // A weight of an enclosing graph is quantized there (ONNXQuantizer asks its parent).
    if (!found && this.parent && !this.local.has(name)) return this.parent.quantizeInitializer(name, t, symmetric, axis);
    if (!found) return `${name} is not an initializer`;
    const tensor = readInitializer(found.field, this.storage.readExternal);
    if (typeof tensor === "string") return `${name}: ${tensor}`;
    if (tensor.dtype.name !== "float32") return `${name} is ${tensor.dtype.name}; tensorcast quantizes float32 weights`;
    const x = tensor.data as Float32Array;
    const dims = tensor.shape;
    const out = t === "int8" ? new Int8Array(x.length) : new Uint8Array(x.length);
    const params: OrtQuantParams[] = [];
    if (axis === undefined) {
      const [lo, hi] = minMax(x);
      params.push(ortScaleZeroPoint(lo, hi, t, symmetric));
      ortQuantizeValues(x, params[0], t, out);
    } else {
      const a = axis < 0 ? axis + dims.length : axis;
      const channels = dims[a];
      const inner = dims.slice(a + 1).reduce((p, d) => p * d, 1);
      const outer = dims.slice(0, a).reduce((p, d) => p * d, 1);
      const slice = new Float32Array(outer * inner);
      for (let c = 0; c < channels; c++) {
        for (let o = 0, k = 0; o < outer; o++) for (let i = 0; i < inner; i++) slice[k++] = x[(o * channels + c) * inner + i];
        const [lo, hi] = minMax(slice);
        const p = ortScaleZeroPoint(lo, hi, t, symmetric);
        params.push(p);
        for (let o = 0; o < outer; o++) ortQuantizeValues(slice.subarray(o * inner, (o + 1) * inner), p, t, out, (o * channels + c) * inner);
      }
    }
    const shape = axis === undefined ? [] : [params.length];
    const v: QValue = { q: `${name}_quantized`, scale: `${name}_scale`, zp: `${name}_zero_point` };
    this.addInitializer(typedTensor(v.scale, FLOAT, shape, params.map((p) => p.scale)));
    this.addInitializer(typedTensor(v.zp, ELEM[t], shape, params.map((p) => p.zeroPoint)));
    this.addInitializer(this.storage.store(v.q, ELEM[t], dims, new Uint8Array(out.buffer)));
    this.quantized.set(name, v);
    return v;
  }

  /** The quantized form of an activation input: quantized already, an initializer (uint8), or a DynamicQuantizeLinear. */
  private activation(name: string): QValue | string {
    const known = this.quantized.get(name);
    if (known) return known;
    if (findInitializer(name, [this.g])) return this.quantizeInitializer(name, "uint8", false, undefined);
    // A value of an enclosing graph: quantized there, its DynamicQuantizeLinear before this body's node.
    if (this.parent && !this.local.has(name)) return this.parent.activation(name);
    let v = this.dql.get(name);
    if (!v) {
      v = { q: `${name}_quantized`, scale: `${name}_scale`, zp: `${name}_zero_point` };
      this.push(makeNode("DynamicQuantizeLinear", [name], [v.q, v.scale, v.zp], `${name}_QuantizeLinear`, ""));
      this.dql.set(name, v);
    }
    return v;
  }

  /** MatMul -> MatMulInteger, Conv -> ConvInteger (operators/matmul.py, operators/conv.py). */
  private integerOp(n: PbMessage, opType: "MatMulInteger" | "ConvInteger", channelAxis: number): boolean {
    const inputs = n.strings(1);
    const label = nodeLabel(n);
    const gemm = this.origins.get(n);
    const reject = (reason: string): false => {
      this.report.left.push({ node: label, opType: n.string(4), reason: gemm ? `${reason} (the MatMul made of Gemm ${gemm})` : reason });
      return false;
    };
    if (inputs.length < 2) return reject("it has fewer than two inputs");
    const w = this.lookup(inputs[1]);
    if (!w) return reject(opType === "MatMulInteger" ? "B is not an initializer (MatMulConstBOnly)" : "W is not an initializer");
    // The header only: the weight is read once, by quantizeInitializer.
    const header = initializerHeader(w.field);
    if (header.dataType !== FLOAT) return reject(`the weight is ${typeName(header.dataType)}`);
    const mark = this.newNodes.length;
    const a = this.activation(inputs[0]);
    if (typeof a === "string") return reject(a);
    const symmetric = this.s.weightType === "int8";
    const b = this.quantizeInitializer(inputs[1], this.s.weightType, symmetric, this.s.perChannel ? channelAxis : undefined);
    if (typeof b === "string") {
      this.newNodes.length = mark;
      return reject(b);
    }
    const out = n.strings(2)[0];
    const name = n.string(3);
    const qName = name ? `${name}_quant` : "";
    const qOut = `${out}_output_quantized`;
    const attrs = opType === "ConvInteger" ? n.subs(5, "AttributeProto") : [];
    this.push(makeNode(opType, [a.q, b.q, a.zp, b.zp], [qOut], qName, "", attrs));
    this.push(makeNode("Cast", [qOut], [`${qOut}_cast_output`], `${qOut}_cast`, "", [intAttribute("to", FLOAT)]));
    const mulName = qName ? `${qName}_scales_mul` : `${a.scale}_${b.scale}_mul`;
    if (!this.nodeNames.has(mulName)) this.push(makeNode("Mul", [a.scale, b.scale], [`${mulName}:0`], mulName, ""));
    const hasBias = opType === "ConvInteger" && inputs.length === 3 && inputs[2] !== "";
    const scaled = hasBias ? `${out}quant_scaled_output` : out;
    this.push(makeNode("Mul", [`${qOut}_cast_output`, `${mulName}:0`], [scaled], qName ? `${qName}_output_scale_mul` : "", ""));
    if (hasBias) {
      const rank = header.dims.length;
      const shape = new Array<number>(rank).fill(1);
      shape[1] = -1;
      this.addInitializer(typedTensor(`${out}_bias_reshape_shape`, 7, [rank], shape));
      this.push(makeNode("Reshape", [inputs[2], `${out}_bias_reshape_shape`], [`${out}_bias_reshape_output`], "", ""));
      this.push(makeNode("Add", [scaled, `${out}_bias_reshape_output`], [out], `${out}_bias_add`, ""));
    }
    return true;
  }

  /** Gather of an initializer table: quantized as an activation, the output held quantized (operators/gather.py). */
  private gather(n: PbMessage): boolean {
    const inputs = n.strings(1);
    if (!this.lookup(inputs[0])) return false;
    const v = this.quantizeInitializer(inputs[0], "uint8", false, undefined);
    if (typeof v === "string") {
      this.report.left.push({ node: nodeLabel(n), opType: "Gather", reason: v });
      return false;
    }
    this.holdQuantized(n, v, 0);
    return true;
  }

  /** Transpose of a quantized value stays quantized (operators/direct_q8.py). */
  private direct(n: PbMessage): boolean {
    const v = this.quantized.get(n.strings(1)[0]);
    if (!v) return false;
    this.holdQuantized(n, v, 0);
    return true;
  }

  /** The node reads input `k`'s quantized form and writes `Y_quantized` with the same scale and zero point. */
  private holdQuantized(n: PbMessage, v: QValue, k: number): void {
    const out = n.strings(2)[0];
    const qOut = `${out}_quantized`;
    this.quantized.set(out, { q: qOut, scale: v.scale, zp: v.zp });
    n.setStringAt(2, 0, qOut);
    n.setStringAt(1, k, v.q);
    this.push(n);
  }
}

/** A TensorProto as onnx.helper.make_tensor writes a list: float_data, int32_data or int64_data (packed). */
function typedTensor(name: string, dataType: number, dims: readonly number[], values: readonly number[]): PbMessage {
  const t = new PbMessage([], "TensorProto");
  for (const d of dims) t.addVarint(1, d);
  t.addVarint(2, dataType);
  let field: number;
  let data: Uint8Array;
  if (dataType === FLOAT) {
    field = 4;
    data = new Uint8Array(values.length * 4);
    const view = new DataView(data.buffer);
    values.forEach((v, i) => view.setFloat32(4 * i, v, true));
  } else {
    field = dataType === 7 ? 7 : 5;
    const parts = values.map((v) => new PbMessage([], "packed").addVarint(1, v).fields[0].data);
    data = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
    let at = 0;
    for (const p of parts) {
      data.set(p, at);
      at += p.length;
    }
  }
  t.fields.push({ no: field, wire: 2, data });
  t.addString(8, name);
  return t;
}


/**
 * Runs a bfloat16 graph where onnxruntime's CPU provider has no bfloat16 kernels (1.30 has only
 * Cast to and from bfloat16): a rewrite of the ModelProto that keeps every rounding the bfloat16
 * model specifies and lets each operator compute in float32.
 *
 * - Every bfloat16 tensor type (graph inputs, outputs, value_info, in bodies too) is declared
 *   float32, and every bfloat16 tensor (initializers, Constant values, tensor attributes) becomes a
 *   float32 tensor holding exactly the bfloat16 values (bits << 16).
 * - A Cast(to=bfloat16) stays and is followed by Cast(to=float32): the rounding at every Cast is
 *   onnxruntime's own (bf16-emulate.test.ts checks it rounds to nearest even, as tensorcast does).
 * - Every other node output the bfloat16 model computes in bfloat16 is rounded by the same Cast
 *   pair, so each operator's result is its float32 result rounded once to bfloat16. A true
 *   bfloat16 kernel may accumulate in another precision or order (a MatMul summing in bfloat16 or
 *   in float32), so the emulation tells how far the converted graph's roundings take the outputs
 *   from float32, not what a given bfloat16 kernel computes bit for bit; hence bfloat16's
 *   tolerances, not bit equality, in the tests.
 *
 * Before rewriting, the bfloat16 model's element types are checked as a bfloat16 runtime would
 * check them (inputs bound to one type parameter agree, declarations match what nodes produce):
 * once everything is float32 a type error would otherwise run silently.
 *
 * Test support, not the library: it edits the model with the library's PbMessage.
 */
import { TensorcastError } from "../../../src/errors.js";
import { PbMessage, type PbField } from "../../../src/io/onnx/precision/pb.js";
import { bodiesOf, castNode, elemTypeOf, UniqueNames } from "../../../src/io/onnx/precision/graph.js";
import { schemaAt, slotOf } from "../../../src/io/onnx/precision/schema-types.js";

const FLOAT = 1;
const BF16 = 16;

/**
 * What the rewrite did, for the tests to assert it is not vacuous.
 * @example emulateBfloat16(bf16Mlp).tensors  // 4: w1, b1, w2, b2 widened to float32
 */
export interface EmulationReport {
  /** The rewritten model. */
  bytes: Uint8Array;
  /** bfloat16 tensors turned into float32 ones holding the same values. */
  tensors: number;
  /** bfloat16 declarations (value infos, body inputs and outputs) turned float32. */
  declarations: number;
  /** Cast(to=bfloat16) nodes followed by a Cast back to float32. */
  casts: number;
  /** Other node outputs rounded by an inserted Cast pair. */
  rounded: number;
}

/**
 * Rewrites a serialized bfloat16 ModelProto into its float32 emulation (see the module comment).
 * @example emulateBfloat16(convertModelPrecision(mlp, { to: "bfloat16" }).bytes).rounded  // 5: Gemm, Relu, MatMul, Add, Sigmoid
 * @throws TensorcastError INVALID_DATA when the bfloat16 model's types disagree (a node reads
 *         float32 and bfloat16 for one type parameter, a declaration says another type than the
 *         producer makes); NOT_IMPLEMENTED for external or sparse bfloat16 tensors.
 */
export function emulateBfloat16(bytes: Uint8Array): EmulationReport {
  const model = PbMessage.parse(bytes, "ModelProto");
  const main = model.subs(8, "OperatorSetIdProto").find((o) => o.string(1) === "" || o.string(1) === "ai.onnx");
  const opset = main ? Number(main.varint(2) ?? 0n) : 0;
  const graph = model.sub(7, "GraphProto");
  if (!graph) throw new TensorcastError("INVALID_DATA", "ModelProto has no graph");
  const e = new Emulator(opset, new UniqueNames(graph));
  e.graph(graph, new Map());
  return { bytes: model.encode(bytes.length * 2 + 1024), tensors: e.tensors, declarations: e.declarations, casts: e.casts, rounded: e.rounded };
}

class Emulator {
  tensors = 0;
  declarations = 0;
  casts = 0;
  rounded = 0;

  constructor(readonly opset: number, readonly names: UniqueNames) {}

  /** Checks and rewrites graph `g`; `outer`: element types of the enclosing graphs' values (bfloat16 still). */
  graph(g: PbMessage, outer: Map<string, number>): void {
    const gname = g.string(2);
    if (g.has(15)) throw new TensorcastError("NOT_IMPLEMENTED", `graph ${JSON.stringify(gname)}: sparse initializers are not emulated`);
    const types = new Map(outer);
    const declared = new Map<string, number>();
    for (const no of [11, 12, 13]) for (const v of g.subs(no, "ValueInfoProto")) declared.set(v.string(1), elemTypeOf(v));
    for (const v of g.subs(11, "ValueInfoProto")) types.set(v.string(1), elemTypeOf(v));
    for (const t of g.subs(5, "TensorProto")) types.set(t.string(8), t.int(2));

    const nodes: PbField[] = [];
    for (const f of g.all(1)) {
      const node = g.message(f, "NodeProto");
      const produced = this.infer(node, types, gname);
      const outs = node.strings(2);
      produced.forEach((t, k) => {
        const name = outs[k];
        if (name === "") return;
        const d = declared.get(name);
        if (d && t && d !== t) throw new TensorcastError("INVALID_DATA", `graph ${JSON.stringify(gname)}: ${name} is declared as type ${d} but ${node.string(4)} ${JSON.stringify(node.string(3))} makes type ${t}`);
        types.set(name, t || d || 0);
      });
      // Bodies see the values defined so far, in their bfloat16 types.
      for (const body of bodiesOf(node)) this.graph(body, types);
      this.rewriteAttributes(node);
      nodes.push(f);
      const op = node.string(4);
      outs.forEach((name, k) => {
        if (name === "" || types.get(name) !== BF16 || op === "Constant") return;
        // A Cast to bfloat16 rounds by itself; any other node is made to round what it computed.
        const isCast = op === "Cast";
        const raw = isCast ? name : this.names.fresh(`${name}__f32`);
        const bf = this.names.fresh(`${name}__bf16`);
        node.setStringAt(2, k, isCast ? bf : raw);
        if (!isCast) nodes.push(fieldOf(castNode(this.names.fresh(`${name}__round`), raw, bf, BF16, this.opset)));
        nodes.push(fieldOf(castNode(this.names.fresh(`${name}__widen`), bf, name, FLOAT, this.opset)));
        if (isCast) this.casts++;
        else this.rounded++;
      });
    }
    for (const v of g.subs(12, "ValueInfoProto")) {
      const t = types.get(v.string(1)) ?? 0;
      const d = elemTypeOf(v);
      if (t && d && t !== d) throw new TensorcastError("INVALID_DATA", `graph ${JSON.stringify(gname)}: output ${v.string(1)} is declared as type ${d} but is type ${t}`);
    }
    for (const no of [11, 12, 13]) for (const v of g.subs(no, "ValueInfoProto")) { const tp = v.sub(2, "TypeProto"); if (tp) this.declarations += widenType(tp); }
    for (const f of g.all(5)) this.widenTensor(g, f);
    const first = g.fields.findIndex((f) => f.no === 1);
    const rest = g.fields.filter((f) => f.no !== 1);
    rest.splice(first < 0 ? 0 : Math.min(first, rest.length), 0, ...nodes);
    g.fields = rest;
  }

  /** The element types a node produces, checking that the inputs it binds to one type parameter agree. */
  infer(node: PbMessage, types: Map<string, number>, gname: string): number[] {
    const op = node.string(4);
    const domain = node.string(7);
    const ins = node.strings(1).map((s) => (s === "" ? 0 : (types.get(s) ?? 0)));
    const outs = node.strings(2);
    const attrs = node.subs(5, "AttributeProto");
    const attr = (name: string): PbMessage | undefined => attrs.find((a) => a.string(1) === name);
    const where = `graph ${JSON.stringify(gname)}: ${op} ${JSON.stringify(node.string(3))}`;
    if (domain !== "" && domain !== "ai.onnx") return outs.map(() => 0);
    if (op === "Cast") return [Number(attr("to")?.varint(3) ?? 0n)];
    if (op === "Constant") {
      const a = attrs[0];
      const n = a?.string(1);
      return [n === "value" ? (a.sub(5, "TensorProto")?.int(2) ?? 0) : n === "value_float" || n === "value_floats" ? FLOAT : n === "value_int" || n === "value_ints" ? 7 : 0];
    }
    if (op === "ConstantOfShape") return [attr("value")?.sub(5, "TensorProto")?.int(2) ?? FLOAT];
    if (op === "If" || op === "Loop" || op === "Scan") {
      const bodies = op === "If" ? ["then_branch", "else_branch"] : ["body"];
      const lists = bodies.map((b) => (attr(b)?.sub(6, "GraphProto")?.subs(12, "ValueInfoProto") ?? []).map(elemTypeOf));
      if (op === "If" && lists[1].join() !== lists[0].join()) throw new TensorcastError("INVALID_DATA", `${where}: the branches' outputs have types ${lists[0]} and ${lists[1]}`);
      return outs.map((_, k) => lists[0][op === "Loop" ? k + 1 : k] ?? 0);
    }
    const schema = schemaAt(op, this.opset);
    if (!schema) return outs.map(() => 0);
    const bound = new Map<string, number>();
    ins.forEach((t, j) => {
      const slot = slotOf(schema, j, false);
      if (t === 0 || typeof slot !== "string") return;
      const b = bound.get(slot);
      if (b !== undefined && b !== t) throw new TensorcastError("INVALID_DATA", `${where}: inputs bound to ${slot} are types ${b} and ${t}`);
      bound.set(slot, t);
    });
    return outs.map((_, k) => {
      const slot = slotOf(schema, k, true);
      if (slot === undefined) return 0;
      if (typeof slot !== "string") return slot.length === 1 ? slot[0] : 0;
      const dt = attr("to") ?? attr("dtype");
      return bound.get(slot) ?? (dt?.has(3) ? Number(dt.varint(3)) : 0);
    });
  }

  /** bfloat16 tensor attributes become float32; a `dtype` naming bfloat16 names float32 (the output is rounded after). */
  rewriteAttributes(node: PbMessage): void {
    const op = node.string(4);
    for (const a of node.subs(5, "AttributeProto")) {
      if (a.has(22) || a.has(23)) throw new TensorcastError("NOT_IMPLEMENTED", `${op}: sparse tensor attributes are not emulated`);
      for (const f of [...a.all(5), ...a.all(10)]) this.widenTensor(a, f);
      if (op !== "Cast" && a.string(1) === "dtype" && a.int(3) === BF16) a.setVarint(3, FLOAT);
    }
  }

  /** A bfloat16 TensorProto (field `f` of `parent`) replaced by float32 holding the same values. */
  widenTensor(parent: PbMessage, f: PbField): void {
    const t = parent.message(f, "TensorProto");
    if (t.int(2) !== BF16) return;
    if (t.has(13) || t.int(14) === 1) throw new TensorcastError("NOT_IMPLEMENTED", `tensor ${JSON.stringify(t.string(8))}: external bfloat16 data is not emulated`);
    let codes: number[];
    const raw = t.all(9).at(-1);
    if (raw) {
      const view = new DataView(raw.data.buffer, raw.data.byteOffset, raw.data.byteLength);
      codes = Array.from({ length: raw.data.byteLength >> 1 }, (_, i) => view.getUint16(2 * i, true));
    } else codes = t.varints(5).map((v) => Number(v & 0xffffn));
    const out = new Uint8Array(4 * codes.length);
    const view = new DataView(out.buffer);
    codes.forEach((c, i) => view.setUint32(4 * i, c << 16 >>> 0, true));
    t.remove(5).remove(9).setVarint(2, FLOAT);
    t.fields.push({ no: 9, wire: 2, data: out });
    this.tensors++;
  }
}

/** Sets every bfloat16 element type inside a TypeProto (tensor, sequence, map value, optional) to float32; returns how many. */
function widenType(tp: PbMessage): number {
  let n = 0;
  for (const no of [1, 8]) {
    const tensor = tp.sub(no, "TypeProto.Tensor");
    if (tensor && tensor.int(1) === BF16) {
      tensor.setVarint(1, FLOAT);
      n++;
    }
  }
  const seq = tp.sub(4, "TypeProto.Sequence")?.sub(1, "TypeProto");
  if (seq) n += widenType(seq);
  const opt = tp.sub(9, "TypeProto.Optional")?.sub(1, "TypeProto");
  if (opt) n += widenType(opt);
  const map = tp.sub(5, "TypeProto.Map")?.sub(2, "TypeProto");
  if (map) n += widenType(map);
  return n;
}

function fieldOf(msg: PbMessage): PbField {
  return { no: 1, wire: 2, data: new Uint8Array(0), msg };
}

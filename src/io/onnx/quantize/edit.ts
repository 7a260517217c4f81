/**
 * Graph edits the model quantizers share, made so that the bytes come out as onnxruntime's Python
 * quantizers write them (protobuf's serializer orders a message's fields by number, so an added
 * field goes after the last field of its number or below).
 */
import { TensorcastError } from "../../../errors.js";
import { decodeTensorProto } from "../tensorproto.js";
import { PbMessage, utf8Bytes, type PbField } from "../precision/pb.js";
import { bodiesOf } from "../precision/graph.js";
import { payloadOf } from "../precision/tensors.js";
import { Tensor } from "../../../tensor.js";
import { dtype } from "../../../dtype/table.js";

/** Inserts `field` after the last field numbered at most its number (protobuf's field order). */
export function insertOrdered(msg: PbMessage, field: PbField): void {
  let at = 0;
  for (let i = 0; i < msg.fields.length; i++) if (msg.fields[i].no <= field.no && msg.fields[i].no !== 0) at = i + 1;
  msg.fields.splice(at, 0, field);
}

/** A TensorProto as onnx's numpy_helper.from_array writes it: dims, data_type, name, raw_data. */
export function rawTensor(name: string, dataType: number, dims: readonly number[], raw: Uint8Array): PbMessage {
  const t = new PbMessage([], "TensorProto");
  for (const d of dims) t.addVarint(1, d);
  t.addVarint(2, dataType).addString(8, name);
  t.fields.push({ no: 9, wire: 2, data: raw });
  return t;
}

/** An INT attribute as onnx.helper.make_attribute writes it: name, i, type. */
export function intAttribute(name: string, value: number): PbMessage {
  return new PbMessage([], "AttributeProto").addString(1, name).addVarint(3, value).addVarint(20, 2);
}

/**
 * A NodeProto as onnx.helper.make_node writes it: an empty name is not written, and the
 * attributes are sorted by name (make_node takes them as keyword arguments and sorts them), so
 * MatMulNBits' accuracy_level comes between N and bits.
 */
export function makeNode(opType: string, inputs: readonly string[], outputs: readonly string[], name: string, domain: string, attributes: readonly PbMessage[] = []): PbMessage {
  const n = new PbMessage([], "NodeProto");
  for (const s of inputs) n.addString(1, s);
  for (const s of outputs) n.addString(2, s);
  if (name !== "") n.addString(3, name);
  n.addString(4, opType);
  const named = attributes.map((a) => [a.string(1), a] as const);
  named.sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  for (const [, a] of named) n.addMessage(5, a);
  if (domain !== "") n.addString(7, domain);
  return n;
}

/**
 * onnxruntime's ONNXModel.set_opset_import: the version of `domain`'s import set to `version`,
 * the import appended when missing.
 */
export function setOpsetImport(model: PbMessage, domain: string, version: number): void {
  for (const o of model.subs(8, "OperatorSetIdProto")) {
    if (o.string(1) === domain) {
      o.setVarint(2, version);
      return;
    }
  }
  const o = new PbMessage([], "OperatorSetIdProto").addString(1, domain).addVarint(2, version);
  insertOrdered(model, { no: 8, wire: 2, data: new Uint8Array(0), msg: o });
}

/**
 * The tensor of an initializer field, or a reason it cannot be read here; external data is read
 * through `readExternal` (see storage.ts), which says "its data is external" in memory.
 */
export function readInitializer(f: PbField, readExternal: (t: PbMessage) => Uint8Array | string = () => "its data is external"): Tensor | string {
  const payload = payloadOf(f);
  const msg = PbMessage.parse(payload, "TensorProto");
  if (msg.int(14) === 1) {
    const raw = readExternal(msg);
    return typeof raw === "string" ? raw : Tensor.fromBytes(raw, dtype(msg.int(2)), msg.varints(1).map(Number));
  }
  if (msg.has(3)) return "it is segmented";
  return decodeTensorProto(payload, { copy: false }).tensor;
}

/** An initializer's element type (ONNX number) and dims, read from its header only. */
export function initializerHeader(f: PbField): { dataType: number; dims: number[] } {
  const msg = PbMessage.parse(payloadOf(f), "TensorProto");
  return { dataType: msg.int(2), dims: msg.varints(1).map(Number) };
}

/** The name of an ONNX element type number, as messages give it. */
export function typeName(dataType: number): string {
  try {
    return dtype(dataType).name;
  } catch {
    return `element type ${dataType}`;
  }
}

/** The name of a node for messages: its name, else its first output. */
export function nodeLabel(n: PbMessage): string {
  return n.string(3) || `(${n.string(4)} -> ${n.strings(2)[0] ?? ""})`;
}

/**
 * onnxruntime's ONNXModel.clean_initializers: every initializer of `g` (and of the bodies inside
 * it) that no node reads and no output names is removed, with the graph input that declares it.
 * Returns the names `g` reads from enclosing graphs, for the caller's own count.
 */
export function cleanInitializers(g: PbMessage): Set<string> {
  const requested = new Set<string>();
  for (const n of g.subs(1, "NodeProto")) for (const s of n.strings(1)) if (s !== "") requested.add(s);
  for (const v of g.subs(12, "ValueInfoProto")) if (v.string(1) !== "") requested.add(v.string(1));
  for (const n of g.subs(1, "NodeProto")) for (const body of bodiesOf(n)) for (const s of cleanInitializers(body)) requested.add(s);
  const unused = new Set<string>();
  const keep: PbField[] = [];
  for (const f of g.fields) {
    if (f.no === 5) {
      const name = g.message(f, "TensorProto").string(8);
      if (requested.has(name)) requested.delete(name);
      else {
        unused.add(name);
        continue;
      }
    }
    keep.push(f);
  }
  g.fields = keep.filter((f) => f.no !== 11 || !unused.has(g.message(f, "ValueInfoProto").string(1)));
  for (const n of g.subs(1, "NodeProto")) for (const s of n.strings(2)) requested.delete(s);
  return requested;
}

/** Little-endian bytes of a float32 array. */
export function float32Bytes(a: Float32Array): Uint8Array {
  const out = new Uint8Array(a.length * 4);
  const view = new DataView(out.buffer);
  for (let i = 0; i < a.length; i++) view.setFloat32(4 * i, a[i], true);
  return out;
}

/** Throws a usage error unless `v` is an integer in [min, max]. */
export function checkInteger(v: unknown, what: string, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `${what} must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
  }
  return v;
}

export { utf8Bytes };

/**
 * The raw_data length from which onnx's external-data round trip moves a tensor out: onnx.save_model
 * (save_as_external_data, size_threshold 1024) takes raw_data whose sys.getsizeof is 1024 or more,
 * and CPython's getsizeof of a bytes object is 33 + its length; so 991 bytes.
 */
export const RELOAD_EXTERNAL_FROM = 991;

/**
 * What onnxruntime's save_and_reload_model_with_shape_infer leaves on the initializers of `graph`
 * and of every body inside it: onnx.load puts the external data back and sets data_location to
 * DEFAULT, a field a protobuf serializer then writes (0x70 0x00) because it was set. Only initializers
 * with raw_data of RELOAD_EXTERNAL_FROM bytes or more went out, so only they get it. A tensor that
 * has the field already keeps it; one whose data is elsewhere (data_location EXTERNAL: a streamed
 * pass's placeholder) is handed to `external`, whose writer decides by the data's length.
 */
export function markReloaded(graph: PbMessage, external?: (tensor: PbMessage) => void): void {
  for (const t of graph.subs(5, "TensorProto")) {
    if (t.int(14) === 1) external?.(t);
    if (t.fields.some((f) => f.no === 14)) continue;
    const raw = t.fields.find((f) => f.no === 9);
    if (raw && raw.data.length >= RELOAD_EXTERNAL_FROM) insertOrdered(t, { no: 14, wire: 0, data: new Uint8Array([0]) });
  }
  for (const n of graph.subs(1, "NodeProto")) for (const b of bodiesOf(n)) markReloaded(b, external);
}


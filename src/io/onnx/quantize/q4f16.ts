/**
 * q4f16: the q4 model converted to float16 (the whole-graph pass of src/io/onnx/precision/, float32
 * inputs and outputs kept), then each MatMulNBits made to compute in float16. The precision pass
 * does not know the contrib operators and leaves them float32 between Casts; here their scales
 * become float16 (round to nearest even, as onnxconverter-common's float16 conversion does) and the
 * node reads A and writes Y through Casts to and from float16. A float16 A cast to float32 and back
 * is unchanged, so those Cast pairs are removed (removeCastPairs): the product is computed by
 * MatMulNBits in float16 with float16 scales between float16 nodes, as transformers.js' q4f16 files do.
 */
import { dtype } from "../../../dtype/table.js";
import { PbMessage, type PbField } from "../precision/pb.js";
import { bodiesOf, castNode, UniqueNames } from "../precision/graph.js";
import { castWeights } from "../precision/tensors.js";
import { encodeTensorProto } from "../encode.js";
import { readInitializer } from "./edit.js";
import { findInitializer } from "./matmul-nbits.js";

const FLOAT = 1;
const FLOAT16 = 10;

/** Makes every MatMulNBits of a float16-converted model compute in float16 (see the file comment); returns how many. */
export function matMulNBitsToFloat16(
  bytes: Uint8Array, opset: number, readExternal?: (t: PbMessage) => Uint8Array | string, widenedHalf: readonly string[] = [],
): { bytes: Uint8Array; count: number } {
  const model = PbMessage.parse(bytes, "ModelProto");
  const graph = model.sub(7, "GraphProto")!;
  const names = new UniqueNames(graph);
  const converted = new Set<PbField>();
  // Outputs of Casts to float32 whose input is float16: the precision pass's, and this pass's.
  const widened = new Set(widenedHalf);
  let count = 0;
  const walk = (g: PbMessage, stack: PbMessage[]): void => {
    const out: PbField[] = [];
    let changed = false;
    for (const f of g.fields) {
      if (f.no !== 1) {
        out.push(f);
        continue;
      }
      const n = g.message(f, "NodeProto");
      for (const body of bodiesOf(n)) walk(body, [...stack, body]);
      if (n.string(4) !== "MatMulNBits" || n.string(7) !== "com.microsoft") {
        out.push(f);
        continue;
      }
      const inputs = n.strings(1);
      const scales = findInitializer(inputs[2], stack);
      const t = scales ? readInitializer(scales.field, readExternal) : "missing";
      if (typeof t === "string" || t.dtype.name !== "float32") {
        out.push(f);
        continue;
      }
      if (!converted.has(scales!.field)) {
        const half = castWeights(t, { to: dtype("float16"), saturate: true });
        scales!.field.msg = PbMessage.parse(encodeTensorProto(half, { name: inputs[2] }), "TensorProto");
        converted.add(scales!.field);
      }
      const a16 = names.fresh(`${inputs[0]}__float16`);
      const y = n.strings(2)[0];
      const y16 = names.fresh(`${y}__float16`);
      n.setStringAt(1, 0, a16).setStringAt(2, 0, y16);
      const node = (m: PbMessage): PbField => ({ no: 1, wire: 2, data: new Uint8Array(0), msg: m });
      out.push(node(castNode(names.fresh(`${inputs[0]}__cast_float16`), inputs[0], a16, FLOAT16, opset)), f);
      out.push(node(castNode(names.fresh(`${y}__cast_float32`), y16, y, FLOAT, opset)));
      widened.add(y);
      changed = true;
      count++;
    }
    if (changed) g.fields = out;
  };
  walk(graph, [graph]);
  if (count > 0) removeCastPairs(graph, widened);
  return { bytes: count > 0 ? model.encode(bytes.length + 4096) : bytes, count };
}

/** The `to` of a Cast node (0 when it is not an INT attribute: Cast-1 names the type). */
function castTo(n: PbMessage): number {
  const a = n.subs(5, "AttributeProto").find((x) => x.string(1) === "to");
  return a && a.int(20) === 2 ? a.int(3) : 0;
}

/** Every name the nodes of `g`'s bodies read (from `g` or further out). */
function bodyReads(g: PbMessage, into: Set<string>): void {
  for (const n of g.subs(1, "NodeProto")) {
    for (const b of bodiesOf(n)) {
      for (const m of b.subs(1, "NodeProto")) for (const s of m.strings(1)) into.add(s);
      bodyReads(b, into);
    }
  }
}

/**
 * Removes each pair Cast(to float32) -> Cast(to float16) of `g` (and of its bodies) whose first Cast
 * reads a float16 value (`widened` holds such Casts' outputs) and whose middle value nothing else
 * reads: float16 to float32 and back is the identity, so the second Cast's readers read the first
 * one's input instead. These pairs are where the precision pass widened a float16 value for a
 * MatMulNBits it kept in float32 and this pass narrowed it again (and the same after the node).
 * The graph then reads as onnxconverter-common's float16 conversion leaves it, MatMulNBits between
 * float16 nodes with no Cast. (Its own remove_unnecessary_cast_node removes the other order,
 * Cast(to float16) -> Cast(to float32), which rounds; no such pair is made here.)
 */
function removeCastPairs(g: PbMessage, widened: ReadonlySet<string>): void {
  for (const n of g.subs(1, "NodeProto")) for (const b of bodiesOf(n)) removeCastPairs(b, widened);
  const fields = g.fields.filter((f) => f.no === 1);
  const nodes = fields.map((f) => g.message(f, "NodeProto"));
  const readers = new Map<string, number>();
  const pinned = new Set<string>();
  bodyReads(g, pinned);
  for (const v of g.subs(12, "ValueInfoProto")) pinned.add(v.string(1));
  for (const n of nodes) for (const s of n.strings(1)) readers.set(s, (readers.get(s) ?? 0) + 1);
  const producer = new Map<string, number>();
  nodes.forEach((n, k) => n.strings(2).forEach((s) => producer.set(s, k)));
  const drop = new Set<number>();
  const renames = new Map<string, string>();
  nodes.forEach((second, k) => {
    if (second.string(4) !== "Cast" || castTo(second) !== FLOAT16) return;
    const mid = second.strings(1)[0];
    const j = producer.get(mid);
    if (j === undefined || drop.has(j)) return;
    const first = nodes[j];
    const out = second.strings(2)[0];
    if (first.string(4) !== "Cast" || castTo(first) !== FLOAT || !widened.has(mid)) return;
    if (readers.get(mid) !== 1 || pinned.has(mid) || pinned.has(out)) return;
    drop.add(j).add(k);
    renames.set(out, renames.get(first.strings(1)[0]) ?? first.strings(1)[0]);
  });
  if (drop.size === 0) return;
  const dropped = new Set([...drop].map((k) => fields[k]));
  g.fields = g.fields.filter((f) => !dropped.has(f));
  for (const n of nodes) n.strings(1).forEach((s, i) => renames.has(s) && n.setStringAt(1, i, renames.get(s)!));
  const gone = new Set([...drop].flatMap((k) => nodes[k].strings(2)));
  g.fields = g.fields.filter((f) => f.no !== 13 || !gone.has(g.message(f, "ValueInfoProto").string(1)));
}

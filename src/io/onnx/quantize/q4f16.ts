/**
 * q4f16: the q4 model converted to float16 (the whole-graph pass of src/io/onnx/precision/, float32
 * inputs and outputs kept), then each MatMulNBits made to compute in float16. The precision pass
 * does not know the contrib operators and leaves them float32 between Casts; here their scales
 * become float16 (round to nearest even, as onnxconverter-common's float16 conversion does) and the
 * node reads A and writes Y through Casts to and from float16. A float16 A cast to float32 and back
 * is unchanged, so the Casts cost no accuracy; the product is computed by MatMulNBits in float16
 * with float16 scales, as transformers.js' q4f16 files do.
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
export function matMulNBitsToFloat16(bytes: Uint8Array, opset: number, readExternal?: (t: PbMessage) => Uint8Array | string): { bytes: Uint8Array; count: number } {
  const model = PbMessage.parse(bytes, "ModelProto");
  const graph = model.sub(7, "GraphProto")!;
  const names = new UniqueNames(graph);
  const converted = new Set<PbField>();
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
      changed = true;
      count++;
    }
    if (changed) g.fields = out;
  };
  walk(graph, [graph]);
  return { bytes: count > 0 ? model.encode(bytes.length + 4096) : bytes, count };
}

/**
 * Models whose initializers hold external data, as the external-data tests build them: the
 * TensorProto messages by hand (encodeModel has no external_data), spliced into an encoded model's
 * graph.
 */
import { WireReader } from "../../src/io/onnx/wire.js";
import { WireWriter } from "../../src/io/onnx/wire-writer.js";

/**
 * An external TensorProto: dims, data_type, name, then the external_data entries and data_location.
 * @example externalTensor("w", [4], 1, [["location", "w.bin"], ["offset", "0"], ["length", "16"]])
 */
export function externalTensor(
  name: string, dims: readonly number[], onnxType: number, entries: readonly (readonly [string, string])[], extra?: (w: WireWriter) => void,
): Uint8Array {
  const w = new WireWriter();
  for (const d of dims) w.int64Field(1, d);
  w.uint32Field(2, onnxType);
  w.stringField(8, name);
  for (const [k, v] of entries) w.fork(13).stringField(1, k).stringField(2, v).join();
  extra?.(w);
  w.uint32Field(14, 1);
  return w.finish().slice();
}

/**
 * `encoded` (a ModelProto) with `initializers` (TensorProto messages) appended to its graph.
 * @example withInitializers(encodeModel(m), [externalTensor("w", [4], 1, entries)])
 */
export function withInitializers(encoded: Uint8Array, initializers: readonly Uint8Array[]): Uint8Array {
  const r = new WireReader(encoded, "ModelProto");
  const w = new WireWriter(4096);
  for (let f = r.next(); f !== 0; f = r.next()) {
    const start = r.pos;
    if (f === 7) {
      w.fork(7).raw(r.bytes());
      for (const t of initializers) w.bytesField(5, t);
      w.join();
      continue;
    }
    r.skip();
    w.raw(new WireWriter().tag(f, r.wireType).finish());
    w.raw(encoded.subarray(start, r.pos));
  }
  return w.finish().slice();
}

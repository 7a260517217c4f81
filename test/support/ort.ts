/**
 * onnxruntime-node and float16. Where the runtime has `Float16Array` (Node 24+), onnxruntime-node
 * 1.30 hands float16 outputs back as a Float16Array, and a float16 input arrives as 0 bytes ("not
 * enough space: expected 8388608, got 0"). On Node 20 both are Uint16Array bit patterns. Tests compare bit patterns, so these two helpers
 * give every runtime the same view.
 */
import * as ort from "onnxruntime-node";

/**
 * A float16 input from its bit patterns. onnxruntime-common wraps a Uint16Array in a Float16Array
 * where one exists, and the native binding then reads 0 bytes from it; putting the Uint16Array
 * back as the tensor's CPU data (a field of onnxruntime-common's Tensor) is read correctly on
 * every Node.
 */
export function float16Feed(codes: Uint16Array, dims: readonly number[]): ort.Tensor {
  const t = new ort.Tensor("float16", codes, dims);
  if (!(t.data instanceof Uint16Array)) (t as unknown as { cpuData: Uint16Array }).cpuData = codes;
  return t;
}

/** A tensor's data, float16 as Uint16Array bit patterns whatever storage onnxruntime chose. */
export function ortData(t: ort.Tensor): ort.Tensor["data"] {
  const data = t.data as ArrayBufferView;
  if (t.type === "float16" && !(data instanceof Uint16Array)) {
    return new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2);
  }
  return t.data;
}

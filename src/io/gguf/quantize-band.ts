/**
 * One band of a GGUF quantization job: whole rows of one tensor, read as its GGML type, checked as
 * llama.cpp's loader checks them (ggml_validate_row_data), made float32 (dequantized for block
 * types), quantized by src/ggml/quantize and checked again. The same code runs on a Node conversion
 * worker (src/node/convert/run-task.ts), in a page's Web Worker and, without workers, in the calling
 * thread. Browser-safe: no Node built-ins.
 */
import { TensorcastError } from "../../errors.js";
import { dequantizeBlocks } from "../../ggml/dequantize.js";
import { quantizeRows } from "../../ggml/quantize/index.js";
import { validateRowData } from "../../ggml/validate.js";
import type { GgmlType } from "../../ggml/types.js";

/** Throws INVALID_DATA naming `what` where ggml_validate_row_data refuses `bytes` (from block `firstBlock` of its tensor). */
export function checkRows(what: string, t: GgmlType, bytes: Uint8Array, firstBlock: number): void {
  const bad = validateRowData(t, bytes);
  if (bad) throw new TensorcastError("INVALID_DATA", `${what} has invalid data: ${bad.reason} at ${t.blockSize === 1 ? "element" : "block"} ${firstBlock + bad.index} of its ${t.name} data (llama.cpp's ggml_validate_row_data refuses it too)`);
}

/** A band's bytes as float32 values (F32 as they are; F16, BF16 and block types decoded). */
function toFloat32(t: GgmlType, bytes: Uint8Array, values: number): Float32Array {
  if (t.name === "F32") {
    const aligned = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
    return new Float32Array(aligned.buffer, aligned.byteOffset, values);
  }
  const out = new Float32Array(values);
  dequantizeBlocks(t, bytes, 0, out, 0, values / t.blockSize);
  return out;
}

/**
 * The `to` bytes of the rows of `ncols` values in `raw` (`from` data starting at block
 * `firstBlock` of tensor `tensor`), quantized with `imatrix` (the expert's weights) when given.
 * @throws TensorcastError INVALID_DATA where the input or the output fails ggml_validate_row_data.
 */
export function quantizeBand(tensor: string, from: GgmlType, to: GgmlType, raw: Uint8Array, ncols: number, firstBlock: number, imatrix?: Float32Array): Uint8Array {
  const what = `tensor ${JSON.stringify(tensor)}`;
  checkRows(what, from, raw, firstBlock);
  const values = (raw.length / from.typeSize) * from.blockSize;
  const out = quantizeRows(to, toFloat32(from, raw, values), ncols, imatrix);
  checkRows(`${what} quantized to ${to.name}`, to, out, ((firstBlock * from.blockSize) / to.blockSize));
  return out;
}

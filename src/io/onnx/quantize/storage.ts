/**
 * Where the quantizers read the weights a model's bytes do not hold, and where they put the
 * tensors they make. In memory (quantizeModel) every weight is inline and every new tensor is an
 * inline TensorProto. The Node streamed quantizer (src/node/quantize/streamed.ts) hands the passes a
 * skeleton of the model whose big initializers are placeholders with external data: it reads each
 * one when a pass asks for it, and keeps the big quantized tensors out of memory the same way, so
 * that memory holds one weight at a time, not the model.
 */
import type { ExternalTensorHook } from "../precision/tensors.js";
import type { PbMessage } from "../precision/pb.js";
import { rawTensor } from "./edit.js";

/** How the passes reach tensor data outside the model's bytes (see the file comment). */
export interface QuantizeStorage {
  /** The raw bytes of a TensorProto whose data is external (data_location 1), or why they cannot be read. */
  readExternal(tensor: PbMessage): Uint8Array | string;
  /** A TensorProto holding `raw` (onnx's numpy_helper.from_array fields: dims, data_type, name, raw_data), or a stand-in for one. */
  store(name: string, dataType: number, dims: readonly number[], raw: Uint8Array): PbMessage;
  /**
   * Told of each tensor with external data among the initializers when the dynamic pass does what
   * onnxruntime's reload does to them (markReloaded): written inline, such a tensor of 991 bytes or
   * more gets data_location DEFAULT after its raw_data.
   */
  reloaded?(tensor: PbMessage): void;
  /** The float16 pass's hook for a float32 tensor with external data (fp16, q4f16); without it such a tensor is refused. */
  external?: ExternalTensorHook;
}

/** Every tensor in the model's bytes: external data cannot be read. */
export const IN_MEMORY: QuantizeStorage = {
  readExternal: () => "its data is external",
  store: rawTensor,
};

/**
 * Converting the float32 tensors a model holds (initializers, Constant values, tensor attributes)
 * with tensorcast's own Cast, keeping every other field of their TensorProto.
 */
import { TensorcastError } from "../../../errors.js";
import { dtype, type DType } from "../../../dtype/table.js";
import { cast } from "../../../ops/cast.js";
import { Tensor } from "../../../tensor.js";
import { encodeTensorProto } from "../encode.js";
import { decodeTensorProto } from "../tensorproto.js";
import { PbMessage, type PbField } from "./pb.js";

/** TensorProto fields that hold the type, shape, name or data, replaced when the tensor is rewritten. */
const DATA_FIELDS = new Set([1, 2, 4, 5, 6, 7, 8, 9, 10, 11]);

/** float16's largest finite value: 0b0_11110_1111111111 = (2 - 2^-10) * 2^15 = 65504. */
export const FLOAT16_MAX = 65504;

/**
 * One tensor the pass converted, for the report.
 * @example convertModelPrecision(bytes, { to: "float16" }).tensors[0].to.dtype.name  // "float16"
 */
export interface ConvertedTensor {
  /** The initializer's name, or "<node name>.<attribute>" for a tensor attribute. */
  name: string;
  kind: "initializer" | "constant" | "attribute";
  /** The float32 tensor as it was. */
  from: Tensor;
  /** As written. */
  to: Tensor;
}

export interface TensorCastOptions {
  to: DType;
  /** float8 targets: Cast's saturate attribute. */
  saturate: boolean;
  /**
   * For a float32 TensorProto whose data is not in the bytes given (data_location EXTERNAL): its
   * converted TensorProto (data_type `to`, data still elsewhere), the caller converting the data
   * itself, as the Node converter streams a large model's weights. `before`: how many tensors the
   * pass has reported so far, to place this one among them. Without it such a tensor is refused.
   */
  external?: ExternalTensorHook;
}

/**
 * See TensorCastOptions.external.
 * @example
 * const external: ExternalTensorHook = (t) => t.setVarint(2, dtype("float16").onnx);
 */
export type ExternalTensorHook = (tensor: PbMessage, label: string, kind: ConvertedTensor["kind"], before: number) => PbMessage;

/**
 * A float32 tensor's values as the target type. For float16, finite values beyond +/-65504 become
 * +/-65504, as onnxruntime's transformers converter (float16.py, max_finite_val=65504) clamps them,
 * instead of Cast's +/-Inf; everything else (tiny values included) is exactly Cast's result.
 *
 * @example castWeights(Tensor.fromValues([1e6, 1], "float32"), { to: dtype("float16"), saturate: true }).data
 *          // Uint16Array [0x7bff, 0x3c00]
 */
export function castWeights(t: Tensor, opts: TensorCastOptions): Tensor {
  let source = t;
  if (opts.to.name === "float16") {
    const data = t.data as Float32Array;
    let clamped: Float32Array | undefined;
    for (let i = 0; i < data.length; i++) {
      const v = data[i];
      // Only values that Cast would round to infinity: 65520 and up (the tie at 65520 rounds to
      // even, which is 2^16, past the range).
      if ((v >= 65520 || v <= -65520) && Math.abs(v) !== Infinity) {
        clamped ??= data.slice();
        clamped[i] = v > 0 ? FLOAT16_MAX : -FLOAT16_MAX;
      }
    }
    if (clamped) source = Tensor.fromStorage(clamped, "float32", t.shape);
  }
  return cast(source, opts.to, { saturate: opts.saturate });
}

/** A length-delimited field's payload bytes, re-encoded when it was parsed (and perhaps edited). */
export function payloadOf(f: PbField): Uint8Array {
  return f.msg ? f.msg.encode() : f.data;
}

/**
 * The TensorProto in field `f` converted to `opts.to` when it is float32 (its other fields kept);
 * undefined when it is not float32.
 * @throws TensorcastError NOT_IMPLEMENTED for external data without `opts.external`, or segmented
 *         data (the tensor is not in the bytes given); the errors of decodeTensorProto.
 */
export function convertTensorField(f: PbField, opts: TensorCastOptions, label: string, kind: ConvertedTensor["kind"], out: ConvertedTensor[]): PbMessage | undefined {
  const msg = PbMessage.parse(payloadOf(f), "TensorProto");
  if (msg.int(2) !== 1) return undefined;
  if (msg.int(14) === 1) {
    if (opts.external) return opts.external(msg, label, kind, out.length);
    throw new TensorcastError("NOT_IMPLEMENTED", `${label}: its data is external; converting a whole model needs every float tensor inside the .onnx file`);
  }
  const { name, tensor } = decodeTensorProto(payloadOf(f));
  const result = castWeights(tensor, opts);
  const rewritten = PbMessage.parse(encodeTensorProto(result, { name }), "TensorProto");
  for (const field of msg.fields) if (!DATA_FIELDS.has(field.no)) rewritten.fields.push(field);
  out.push({ name: label, kind, from: tensor, to: result });
  return rewritten;
}

/** The ONNX element type number of a type name. */
export function elemOf(name: string): number {
  return dtype(name).onnx;
}

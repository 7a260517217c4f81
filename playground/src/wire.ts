/**
 * The tensor box's work crosses to a Web Worker and back as plain data: a tensor as its raw bytes
 * (transferred, not copied), strings as a list. Large pastes are parsed and cast off the main
 * thread, which only draws one page of the result.
 */
import { Tensor } from "tensorcast";
import { runTensorBox, type Failure, type TensorOutcome, type TensorRequest } from "./tensorBox.js";

export interface WireTensor {
  readonly dtype: string;
  readonly shape: readonly number[];
  readonly bytes?: Uint8Array;
  readonly strings?: readonly string[];
}

export interface WireOutcome {
  readonly input?: WireTensor;
  readonly inputError?: Failure;
  readonly output?: WireTensor;
  readonly back?: WireTensor;
  readonly backError?: Failure;
  readonly scaleNote?: string;
  readonly error?: Failure;
  readonly note?: string;
}

function toWire(x: Tensor, transfer: ArrayBuffer[]): WireTensor {
  if (x.dtype.kind === "string") return { dtype: x.dtype.name, shape: x.shape, strings: x.toValues() as string[] };
  // A copy of its own, so transferring it never detaches storage the other tensor still uses.
  const bytes = x.bytes().slice();
  transfer.push(bytes.buffer as ArrayBuffer);
  return { dtype: x.dtype.name, shape: x.shape, bytes };
}

/** A tensor back from the wire. */
export function fromWire(w: WireTensor): Tensor {
  return w.strings ? Tensor.fromValues(w.strings as string[], "string", w.shape) : Tensor.fromBytes(w.bytes!, w.dtype, w.shape);
}

/** Runs the box and packs its outcome, with the buffers to transfer. */
export function runToWire(r: TensorRequest): { outcome: WireOutcome; transfer: ArrayBuffer[] } {
  const o: TensorOutcome = runTensorBox(r);
  const transfer: ArrayBuffer[] = [];
  const outcome: WireOutcome = {
    ...(o.input ? { input: toWire(o.input, transfer) } : {}),
    ...(o.output ? { output: toWire(o.output, transfer) } : {}),
    ...(o.back ? { back: toWire(o.back, transfer) } : {}),
    ...(o.backError ? { backError: o.backError } : {}),
    ...(o.scaleNote ? { scaleNote: o.scaleNote } : {}),
    ...(o.inputError ? { inputError: o.inputError } : {}),
    ...(o.error ? { error: o.error } : {}),
    ...(o.note ? { note: o.note } : {}),
  };
  return { outcome, transfer };
}

/**
 * What a cast worker is asked and answers, and how it answers: one element range, converted with the
 * same `convert()` that `cast` runs. Shared by the Node worker (src/node/cast-worker.ts) and the Web
 * Worker (src/web/cast-worker.ts), which only differ in how messages arrive.
 */
import type { RoundMode } from "../dtype/minifloat.js";
import { dtype, type DTypeName, type Storage } from "../dtype/table.js";
import { TensorcastError, type ErrorCode } from "../errors.js";
import { convert } from "../kernels/convert.js";

/** Typed-array storage (every type but string). */
export type NumericStorage = Exclude<Storage, string[]>;

/** A chunk for a worker: `count` elements from the start of `src` into the start of `dst`, both on shared memory. */
export interface CastRangeRequest {
  readonly id: number;
  readonly src: NumericStorage;
  readonly dst: NumericStorage;
  readonly from: DTypeName;
  readonly to: DTypeName;
  readonly count: number;
  readonly saturate: boolean;
  readonly roundMode: RoundMode;
  /** Chunks finished, shared with the caller: the worker adds 1 when it has converted its range. */
  readonly done: Int32Array;
  /** The staging slot `src` lives in (-1: none); the worker sets `slots[slot]` to 0 once it has read it. */
  readonly slot: number;
  readonly slots: Int32Array;
}

export type CastRangeResponse =
  | { readonly id: number; readonly error?: undefined }
  | { readonly id: number; readonly error: { readonly name: string; readonly code?: string; readonly message: string } };

/** Converts one requested range and says how it went (never throws: an error becomes the answer). */
export function castRange(request: CastRangeRequest): CastRangeResponse {
  let response: CastRangeResponse;
  try {
    const opts = { saturate: request.saturate, roundMode: request.roundMode };
    convert(request.src, dtype(request.from), request.dst, dtype(request.to), request.count, opts);
    response = { id: request.id };
  } catch (e) {
    const err = e as Error;
    response = {
      id: request.id,
      error: { name: err?.name ?? "Error", code: e instanceof TensorcastError ? e.code : undefined, message: err?.message ?? String(e) },
    };
  }
  // The chunk is read: its staging slot may be refilled, and the caller may hand out another.
  if (request.slot >= 0) Atomics.store(request.slots, request.slot, 0);
  Atomics.add(request.done, 0, 1);
  return response;
}

/** The error a worker's answer carries, rebuilt on the calling side (a TensorcastError keeps its code). */
export function responseError(error: NonNullable<CastRangeResponse["error"]>): Error {
  return error.code ? new TensorcastError(error.code as ErrorCode, error.message) : Object.assign(new Error(error.message), { name: error.name });
}

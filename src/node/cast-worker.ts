/**
 * A castAsync worker: converts one element range of a SharedArrayBuffer-backed input into the
 * matching range of a SharedArrayBuffer-backed output with the same `convert()` that `cast` runs,
 * then says it is done. Nothing is copied or transferred: both views share the caller's memory.
 */
import { parentPort } from "node:worker_threads";
import { dtype } from "../dtype/table.js";
import { TensorcastError } from "../errors.js";
import { convert } from "../kernels/convert.js";
import type { CastRangeRequest, CastRangeResponse } from "./cast-async.js";

const port = parentPort;
if (!port) throw new Error("cast-worker.ts runs as a worker thread of castAsync's pool");

port.on("message", (request: CastRangeRequest) => {
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
  port.postMessage(response);
});

/** A conversion worker: runs tasks from the pool and sends the results back, transferring bytes. */
import { parentPort } from "node:worker_threads";
import { TensorcastError } from "../../index.js";
import type { Ready, Request, Response } from "./protocol.js";
import { runTask } from "./run-task.js";

const port = parentPort;
if (!port) throw new Error("worker.ts runs as a worker thread of the conversion pool");

port.on("message", (request: Request) => {
  let response: Response;
  const transfer: ArrayBuffer[] = [];
  try {
    const result = runTask(request.task);
    const owned = result.op === "convert" ? [result.bytes, result.raw] : result.op === "quantize" ? [result.bytes] : [];
    for (const b of owned) if (isWhole(b) && !transfer.includes(b.buffer as ArrayBuffer)) transfer.push(b.buffer as ArrayBuffer);
    response = { id: request.id, result };
  } catch (e) {
    const err = e as Error;
    response = {
      id: request.id,
      error: { name: err?.name ?? "Error", code: e instanceof TensorcastError ? e.code : undefined, message: err?.message ?? String(e) },
    };
  }
  port.postMessage(response, transfer);
});
// The pool sends tasks only after this, so a worker that fails to load loses none.
port.postMessage({ ready: true } satisfies Ready);

/** Whether a view spans its whole buffer, so the buffer can be transferred without taking more. */
function isWhole(b: Uint8Array): boolean {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && !(b.buffer instanceof SharedArrayBuffer);
}

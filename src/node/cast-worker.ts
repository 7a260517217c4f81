/**
 * A castAsync worker thread: converts the element ranges the pool sends (src/parallel/range.ts),
 * in the caller's shared memory.
 */
import { parentPort } from "node:worker_threads";
import { castRange, type CastRequest } from "../parallel/range.js";

const port = parentPort;
if (!port) throw new Error("cast-worker.ts runs as a worker thread of castAsync's pool");

port.on("message", (request: CastRequest) => {
  const { response, transfer } = castRange(request);
  port.postMessage(response, transfer);
});

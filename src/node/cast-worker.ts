/**
 * A castAsync worker thread: converts the element ranges the pool sends (src/parallel/range.ts).
 * Nothing is copied or transferred: both views share the caller's memory.
 */
import { parentPort } from "node:worker_threads";
import { castRange, type CastRangeRequest } from "../parallel/range.js";

const port = parentPort;
if (!port) throw new Error("cast-worker.ts runs as a worker thread of castAsync's pool");

port.on("message", (request: CastRangeRequest) => port.postMessage(castRange(request)));

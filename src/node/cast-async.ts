/**
 * castAsync for Node: `cast` spread over worker threads for large numeric tensors. The scheduling,
 * the pool and the checks are shared with the browser's Web Workers (src/parallel/); this module
 * only says how Node starts a worker and how many threads it has.
 */
import os from "node:os";
import { Worker } from "node:worker_threads";
import type { DTypeLike, DTypeName } from "../dtype/table.js";
import { TensorcastError } from "../errors.js";
import type { WorkerHost } from "../parallel/pool.js";
import type { CastRangeResponse } from "../parallel/range.js";
import { castAsyncOn, castIntoAsyncOn, closePool, sharedZerosOf, type CastAsyncOptions } from "../parallel/split.js";
import type { Tensor } from "../tensor.js";

export { CAST_ASYNC_MIN_ELEMENTS, type CastAsyncOptions } from "../parallel/split.js";

const NODE_WORKERS: WorkerHost = {
  parallelism: () => os.availableParallelism(),
  hasWorkers: () => true,
  sharedMemory: () => true,
  spawn(events) {
    const w = new Worker(new URL("./cast-worker.js", import.meta.url));
    // Unreferenced while idle: the pool never keeps the process alive.
    w.unref();
    let terminating = false;
    w.on("message", (r: CastRangeResponse) => events.message(r));
    w.on("error", (e) => events.error(new TensorcastError("WORKER_FAILED", `a castAsync worker thread failed: ${e.message}`)));
    w.on("exit", (code) => {
      if (!terminating) events.error(new TensorcastError("WORKER_FAILED", `a castAsync worker thread exited with code ${code}`));
    });
    return {
      post: (request, transfer) => w.postMessage(request, transfer),
      // Referenced while it has work, so an awaited result keeps the process alive.
      busy: (busy) => (busy ? w.ref() : w.unref()),
      terminate: () => {
        terminating = true;
        return w.terminate();
      },
    };
  },
};

/**
 * ONNX Cast, like `cast`, with large numeric tensors converted on several worker threads. Resolves
 * to a tensor whose bytes equal `cast(x, to, opts)`'s; rejects with the TensorcastError `cast`
 * throws (and WORKER_FAILED if a worker thread dies). When the work is split, the result's storage
 * is backed by a SharedArrayBuffer. Small tensors (below `minElements`), string casts, same-type
 * casts and `threads: 1` run `cast` in the calling thread.
 *
 * @example const y = await castAsync(x, "float16"); // x: a float32 tensor of 16M elements
 */
export function castAsync<N extends DTypeName>(x: Tensor, to: DTypeLike<N>, opts: CastAsyncOptions = {}): Promise<Tensor<N>> {
  return castAsyncOn(NODE_WORKERS, x, to, opts);
}

/**
 * `castInto` over worker threads: `out` (of the target type and `x`'s shape) receives the bytes
 * `castInto(x, out, opts)` gives, and is what the promise resolves to. The workers write into `out`
 * directly, so it must live in a SharedArrayBuffer for the work to be split; an `out` on an ordinary
 * ArrayBuffer (and the small, string and same-type cases castAsync leaves to `cast`) runs
 * `castInto` in the calling thread. Reusing one shared output spares the page faults of a fresh one.
 * When `x` and `out` are tensors of one shared arena (`createArena(bytes, { shared: true })`) and the
 * pair has a WebAssembly kernel (float32 <-> float16 / bfloat16, float32 -> int8 / uint8, float64 ->
 * float32, int64 -> int32), every thread runs the kernels in place on the arena's memory: no copies.
 *
 * @example const a = createArena(48 << 20, { shared: true }); const xa = a.from(x); await castIntoAsync(xa, a.zeros("float16", x.shape), { threads: 2 });
 *
 * @example const out = sharedZeros("float16", x.shape); await castIntoAsync(x, out);
 */
export function castIntoAsync<N extends DTypeName>(x: Tensor, out: Tensor<N>, opts: CastAsyncOptions = {}): Promise<Tensor<N>> {
  return castIntoAsyncOn(NODE_WORKERS, x, out, opts);
}

/**
 * A zero-filled tensor on a new SharedArrayBuffer: an output `castIntoAsync` can split over
 * threads, or an input its workers read where it is.
 *
 * @example const out = sharedZeros("float16", x.shape); await castIntoAsync(x, out);
 */
export function sharedZeros<N extends DTypeName>(type: DTypeLike<N>, shape: readonly number[]): Tensor<N> {
  return sharedZerosOf(type, shape);
}

/** Stops castAsync's worker threads (they never keep the process alive); the next call starts new ones. */
export function closeCastAsyncPool(): Promise<void> {
  return closePool(NODE_WORKERS);
}

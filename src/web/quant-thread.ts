/**
 * The quantize helper thread for browsers (src/kernels/quant/pipeline.ts): a Web Worker running
 * cast-worker.js (the module castAsync starts; setCastWorkerUrl moves both) quantizes chunks the
 * page copies into shared WebAssembly memory. It needs shared memory, so a cross-origin isolated
 * page; elsewhere every call runs on the calling thread as before. A page's main thread may not
 * block in Atomics.wait, so there the caller spins for the chunk the helper holds (at most the
 * pipeline's 2 ms rescue time); a worker calling tensorcast waits.
 */
import { QuantThreadSwitch } from "../kernels/quant/pipeline.js";
import { startWorker, type WebWorker } from "./cast-async.js";

let worker: WebWorker | undefined;

/** Whether this thread may block in Atomics.wait: a worker may, a page's main thread may not. */
function mayWait(): boolean {
  try {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 1, 0);
    return true;
  } catch {
    return false;
  }
}

const THREAD = new QuantThreadSwitch({
  get canWait() {
    return mayWait();
  },
  spawn(memory, died) {
    const w = startWorker("tensorcast quantize helper");
    w.onerror = (event) => {
      event.preventDefault();
      died();
    };
    w.postMessage({ quantPipeline: memory }, []);
    worker = w;
  },
  stop() {
    worker?.terminate();
    worker = undefined;
  },
});

/**
 * Turns the quantize helper thread on (or off, stopping it): from then on, in a cross-origin
 * isolated page, quantizeLinear / dequantizeLinear on ordinary arrays of 512 Ki elements or more,
 * in the WebAssembly SIMD kernels' cases, run on two threads with the same bytes. The Web Worker
 * starts on the first such call (which runs on the calling thread alone while it starts).
 * @example useQuantizeThread(); const q = quantizeLinear(x, scale, zeroPoint);
 */
export function useQuantizeThread(on: boolean = true): void {
  THREAD.use(on);
}

/** Chunks the helper thread has run since it started (0 when off, or without shared memory). */
export function quantizeThreadChunks(): number {
  return THREAD.chunks();
}

/**
 * The quantize helper thread for browsers (src/kernels/quant/pipeline.ts): a Web Worker running
 * cast-worker.js (the module castAsync starts; setCastWorkerUrl moves both) quantizes chunks the
 * page copies into shared WebAssembly memory. It needs shared memory, so a cross-origin isolated
 * page; elsewhere every call runs on the calling thread as before. The caller never blocks in
 * Atomics.wait (a page's main thread may not): it polls for a chunk the helper holds, at most the
 * pipeline's 2 ms rescue time.
 */
import { QuantThreadSwitch } from "../kernels/quant/pipeline.js";
import { startWorker, type WebWorker } from "./cast-async.js";

let worker: WebWorker | undefined;

const THREAD = new QuantThreadSwitch({
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

/**
 * The quantize helper thread for Node (src/kernels/quant/pipeline.ts): quantizeLinear and
 * dequantizeLinear on large ordinary arrays copy on the calling thread while a worker thread runs
 * the kernels. Off until `useQuantizeThread()` turns it on (the package has no import-time effects).
 */
import { Worker } from "node:worker_threads";
import { QuantThreadSwitch } from "../kernels/quant/pipeline.js";

let worker: Worker | undefined;

const THREAD = new QuantThreadSwitch({
  spawn(memory, died) {
    const w = new Worker(new URL("./quant-worker.js", import.meta.url), { workerData: { memory } });
    // Never keeps the process alive: it only ever works while a call on this thread waits for it.
    w.unref();
    w.on("error", died);
    w.on("exit", died);
    worker = w;
  },
  stop() {
    const w = worker;
    worker = undefined;
    if (w) {
      w.removeAllListeners("exit");
      void w.terminate();
    }
  },
});

/**
 * Turns the quantize helper thread on (or off, stopping the thread): from then on quantizeLinear /
 * dequantizeLinear on ordinary arrays of 512 Ki elements or more, in the WebAssembly SIMD kernels'
 * cases, run on two threads (this one copying chunks in and out, the helper quantizing), with the
 * same bytes. The thread starts on the first such call and is unreferenced (it never keeps the
 * process alive).
 * @example useQuantizeThread(); const q = quantizeLinear(x, scale, zeroPoint);
 */
export function useQuantizeThread(on: boolean = true): void {
  THREAD.use(on);
}

/** Chunks the helper thread has run since it started (0 when off): for tests and benchmarks. */
export function quantizeThreadChunks(): number {
  return THREAD.chunks();
}

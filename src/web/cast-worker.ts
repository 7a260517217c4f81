/**
 * A castAsync Web Worker (a module worker): converts the element ranges the pool sends
 * (src/parallel/range.ts): in the page's shared memory, or copied in and out where the page has none.
 * Sent `{ quantPipeline: memory }` instead, it becomes the quantize helper thread
 * (./quant-thread.ts) for good.
 */
import { serveQuantPipeline } from "../kernels/quant/pipeline.js";
import type { WasmMemory } from "../kernels/wasm/resident.js";
import { castRange, type CastRangeResponse, type CastRequest } from "../parallel/range.js";

/** The slice of a dedicated worker's global scope used here (the core compiles without DOM typings). */
interface WorkerScope {
  onmessage: ((event: { readonly data: CastRequest | { readonly quantPipeline: WasmMemory } }) => void) | null;
  postMessage(message: CastRangeResponse, transfer: ArrayBuffer[]): void;
}

const scope = globalThis as unknown as WorkerScope;
scope.onmessage = (event) => {
  const data = event.data;
  if ("quantPipeline" in data) serveQuantPipeline(data.quantPipeline);
  const { response, transfer } = castRange(data);
  scope.postMessage(response, transfer);
};

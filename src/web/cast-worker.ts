/**
 * A castAsync Web Worker (a module worker): converts the element ranges the pool sends
 * (src/parallel/range.ts): in the page's shared memory, or copied in and out where the page has none.
 */
import { castRange, type CastRangeResponse, type CastRequest } from "../parallel/range.js";

/** The slice of a dedicated worker's global scope used here (the core compiles without DOM typings). */
interface WorkerScope {
  onmessage: ((event: { readonly data: CastRequest }) => void) | null;
  postMessage(message: CastRangeResponse, transfer: ArrayBuffer[]): void;
}

const scope = globalThis as unknown as WorkerScope;
scope.onmessage = (event) => {
  const { response, transfer } = castRange(event.data);
  scope.postMessage(response, transfer);
};

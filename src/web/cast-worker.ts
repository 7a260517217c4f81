/**
 * A castAsync Web Worker (a module worker): converts the element ranges the pool sends
 * (src/parallel/range.ts) in the page's shared memory.
 */
import { castRange, type CastRangeRequest, type CastRangeResponse } from "../parallel/range.js";

/** The slice of a dedicated worker's global scope used here (the core compiles without DOM typings). */
interface WorkerScope {
  onmessage: ((event: { readonly data: CastRangeRequest }) => void) | null;
  postMessage(message: CastRangeResponse): void;
}

const scope = globalThis as unknown as WorkerScope;
scope.onmessage = (event) => scope.postMessage(castRange(event.data));

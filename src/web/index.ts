/**
 * tensorcast/web: the parts of tensorcast that need a browser's Web Workers: castAsync and
 * castIntoAsync on shared memory, and the quantize helper thread (useQuantizeThread). Kept out of the core entry so that pages which do not use them do
 * not carry them.
 */
export {
  castAsync, castIntoAsync, sharedZeros, closeCastAsyncPool, setCastWorkerUrl, CAST_ASYNC_MIN_ELEMENTS, type CastAsyncOptions,
} from "./cast-async.js";
export { useQuantizeThread, quantizeThreadChunks } from "./quant-thread.js";

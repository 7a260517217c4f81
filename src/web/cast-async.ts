/**
 * castAsync for browsers: `cast` spread over Web Workers for large numeric tensors.
 * The scheduling, the pool and the checks are shared with Node's worker threads (src/parallel/); this
 * module only says how a page starts a worker and how many threads it has.
 *
 * In a cross-origin isolated page (served with `Cross-Origin-Opener-Policy: same-origin` and
 * `Cross-Origin-Embedder-Policy: require-corp`) the workers and the page share memory and the page
 * converts a share itself; elsewhere there is no SharedArrayBuffer, and each range is copied to a
 * worker and back (reused transferred buffers) while the page only copies and waits: about as fast
 * as `cast`, but the page stays responsive. (In an isolated page, `callerConverts: false` keeps
 * the page's thread free the same way.) The workers run `cast-worker.js`, the module beside this one, started as
 * `new Worker(new URL("./cast-worker.js", import.meta.url), { type: "module" })`: the form Vite and
 * webpack recognise and bundle; with other bundlers emit dist/web/cast-worker.js as an entry of its own
 * next to the bundle, or tell castAsync where it is with `setCastWorkerUrl`.
 */
import type { DTypeLike, DTypeName } from "../dtype/table.js";
import { TensorcastError } from "../errors.js";
import type { WorkerHost } from "../parallel/pool.js";
import type { CastRangeResponse, CastRequest } from "../parallel/range.js";
import { castAsyncOn, castIntoAsyncOn, closePool, sharedZerosOf, type CastAsyncOptions } from "../parallel/split.js";
import type { Tensor } from "../tensor.js";

export { CAST_ASYNC_MIN_ELEMENTS, type CastAsyncOptions } from "../parallel/split.js";

/** The slice of URL used here (the global of browsers and Node). */
interface WebUrl {
  readonly href: string;
}
declare const URL: new (url: string, base: string) => WebUrl;
/** `import.meta` as browsers and Node have it. */
type ModuleMeta = ImportMeta & { readonly url: string };

/** The slice of the DOM's Worker used here (the core compiles without DOM typings). */
export interface WebWorker {
  onmessage: ((event: { readonly data: CastRangeResponse }) => void) | null;
  onerror: ((event: { readonly message?: string; preventDefault(): void }) => void) | null;
  onmessageerror: ((event: unknown) => void) | null;
  postMessage(message: CastRequest | { readonly quantPipeline: unknown }, transfer: ArrayBuffer[]): void;
  terminate(): void;
}
/**
 * The global Worker constructor, declared rather than read off globalThis: webpack emits the worker
 * only for `new Worker(new URL(...))` with the free global `Worker` (a local alias defeats it).
 * Undefined outside browsers (Node): `typeof Worker` guards every use.
 */
declare const Worker: new (url: WebUrl | string, options: { type: "module"; name?: string }) => WebWorker;

interface WebGlobals {
  crossOriginIsolated?: boolean;
  navigator?: { hardwareConcurrency?: number };
}

const web = globalThis as WebGlobals;
let workerUrl: WebUrl | string | undefined;

/**
 * Starts a module worker running cast-worker.js (castAsync's pool, and the quantize helper thread
 * of ./quant-thread.ts), from setCastWorkerUrl's URL when one is set.
 */
export function startWorker(name = "tensorcast castAsync"): WebWorker {
  // Written out in full so that bundlers which follow `new Worker(new URL(...))` emit the worker.
  if (workerUrl === undefined) return new Worker(new URL("./cast-worker.js", (import.meta as ModuleMeta).url), { type: "module", name });
  return new Worker(workerUrl, { type: "module", name });
}

// Spelled without `new URL("./cast-worker.js", import.meta.url)`: bundlers treat that form as an
// asset reference, and webpack emitted an unused raw copy of the worker for this message alone.
function describeWorkerUrl(): string {
  return String(workerUrl ?? (import.meta as ModuleMeta).url.replace(/[^/?#]*([?#].*)?$/, "cast-worker.js"));
}

const WEB_WORKERS: WorkerHost = {
  parallelism: () => Math.max(1, web.navigator?.hardwareConcurrency ?? 1),
  hasWorkers: () => typeof Worker === "function",
  sharedMemory: () => typeof SharedArrayBuffer === "function" && web.crossOriginIsolated !== false,
  spawn(events) {
    const w = startWorker();
    w.onmessage = (event) => events.message(event.data);
    w.onerror = (event) => {
      event.preventDefault();
      const why = event.message ? `: ${event.message}` : " (its script did not load, or failed to run)";
      events.error(new TensorcastError("WORKER_FAILED",
        `a castAsync Web Worker (${describeWorkerUrl()}) failed${why}; serve cast-worker.js beside the module that ` +
        "imports tensorcast/web, or say where it is with setCastWorkerUrl()"));
    };
    w.onmessageerror = () => events.error(new TensorcastError("WORKER_FAILED", "a castAsync Web Worker could not read a message"));
    return {
      post: (request, transfer) => w.postMessage(request, transfer),
      busy: () => undefined,
      terminate: async () => w.terminate(),
    };
  },
};

/**
 * ONNX Cast, like `cast`, with large numeric tensors converted on several Web Workers. Resolves to
 * a tensor whose bytes equal `cast(x, to, opts)`'s; rejects with the TensorcastError `cast` throws,
 * or WORKER_FAILED when a worker's script does not load. When the work is split in a cross-origin
 * isolated page, the result's storage is backed by a SharedArrayBuffer; in other pages it is
 * ordinary memory, the ranges having been copied to the workers and back. Runs `cast` in the
 * calling thread for small tensors (below `minElements`), string and same-type casts, `threads: 1`,
 * and where there is no Worker.
 *
 * @example const y = await castAsync(x, "float16"); // x: a float32 tensor of 16M elements
 */
export function castAsync<N extends DTypeName>(x: Tensor, to: DTypeLike<N>, opts: CastAsyncOptions = {}): Promise<Tensor<N>> {
  return castAsyncOn(WEB_WORKERS, x, to, opts);
}

/**
 * `castInto` over Web Workers: `out` (of the target type and `x`'s shape) receives the bytes
 * `castInto(x, out, opts)` gives, and is what the promise resolves to. In a cross-origin isolated
 * page the workers write into `out` directly, so it must live in a SharedArrayBuffer for the work
 * to be split (`sharedZeros`; another `out` runs `castInto` in the calling thread); in other pages
 * any `out` receives the ranges copied back from the workers. Every case castAsync leaves to `cast`
 * runs `castInto` in the calling thread. In an isolated page, tensors of one shared arena
 * (`createArena(bytes, { shared: true })`) are converted in place by every thread, with no copies.
 *
 * @example const out = sharedZeros("float16", x.shape); await castIntoAsync(x, out);
 */
export function castIntoAsync<N extends DTypeName>(x: Tensor, out: Tensor<N>, opts: CastAsyncOptions = {}): Promise<Tensor<N>> {
  return castIntoAsyncOn(WEB_WORKERS, x, out, opts);
}

/**
 * A zero-filled tensor on a new SharedArrayBuffer: an output `castIntoAsync` can split over Web
 * Workers, or an input they read where it is.
 * @throws TensorcastError UNSUPPORTED_PLATFORM in a page that is not cross-origin isolated.
 *
 * @example const out = sharedZeros("float16", x.shape); await castIntoAsync(x, out);
 */
export function sharedZeros<N extends DTypeName>(type: DTypeLike<N>, shape: readonly number[]): Tensor<N> {
  return sharedZerosOf(type, shape);
}

/** Stops castAsync's Web Workers; the next call starts new ones. */
export function closeCastAsyncPool(): Promise<void> {
  return closePool(WEB_WORKERS);
}

/**
 * Where castAsync's worker module is, for bundles that do not place `cast-worker.js` beside the
 * module importing tensorcast/web (undefined: back to that default). Takes effect for workers
 * started from now on: the running pool is closed.
 *
 * @example setCastWorkerUrl("/assets/tensorcast-cast-worker.js");
 */
export function setCastWorkerUrl(url: WebUrl | string | undefined): Promise<void> {
  workerUrl = url;
  return closeCastAsyncPool();
}

/**
 * castAsync's Web Worker for the shared-arena checks (cast-async-page.ts): src/web/cast-worker.ts as
 * it is, plus one field on each answer to a resident request (a cast within a shared arena),
 * `probe`: "in place" when this thread's convert() runs that cast's two storages in place on the
 * arena's memory (the kernels attached to it here, in the registry residentCast consults), "copied"
 * when it would stream them through this thread's own memory instead, "skipped" when the page had
 * run out of chunks before this worker started. A worker whose kernels silently failed to attach
 * still gives cast()'s bytes, through the copies; only this answer shows it to the page.
 */
import "../../../src/web/cast-worker.js";
import { dtype } from "../../../src/dtype/table.js";
import { sharedResidentOf, type WasmMemory } from "../../../src/kernels/wasm/resident.js";
import type { CastRangeResponse, CastRequest, CastResidentRequest } from "../../../src/parallel/range.js";
import { TYPED_ARRAYS } from "../../../src/tensor.js";

/** The slice of a dedicated worker's global scope used here (the tests compile without DOM typings). */
interface WorkerScope {
  onmessage: ((event: { readonly data: CastRequest }) => void) | null;
  postMessage(message: CastRangeResponse & { probe?: string }, transfer: ArrayBuffer[]): void;
}

const scope = globalThis as unknown as WorkerScope;
// cast-worker.js, imported first, has set its handler; it posts through scope.postMessage, read at each call.
const handle = scope.onmessage!;
const post = scope.postMessage.bind(scope);
let memory: WasmMemory | undefined;
let request: CastRequest | undefined;

scope.onmessage = (event) => {
  request = event.data;
  if (request.kind === "resident" && request.memory) memory = request.memory;
  handle(event);
};
scope.postMessage = (response, transfer) => post(request?.kind === "resident" ? { ...response, probe: probe(request) } : response, transfer);

function probe(r: CastResidentRequest): string {
  if (Atomics.load(r.started, r.cell) === 2) return "skipped";
  if (!memory) return "no memory";
  const from = dtype(r.from);
  const to = dtype(r.to);
  const view = (t: typeof from, offset: number): never => new TYPED_ARRAYS[t.array as keyof typeof TYPED_ARRAYS](memory!.buffer, offset, 0) as never;
  return sharedResidentOf(view(from, r.srcOffset), view(to, r.dstOffset), from, to) === memory ? "in place" : "copied";
}

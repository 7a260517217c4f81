/**
 * The GGUF panel's worker: one quantization job, off the page's thread. The model is read from the
 * File a band of rows at a time (Blob slices); each piece of output goes to the page as it is made,
 * and the next band waits until the page has written it, so memory stays the bands in flight.
 */
import { blobSource, ggufModel, quantizeGgufModel, readGguf } from "tensorcast-gguf-job";
import type { GgufJobMessage, GgufJobRequest } from "./ggufMessages.js";

const scope = globalThis as unknown as {
  onmessage: ((e: MessageEvent) => void) | null;
  postMessage(message: GgufJobMessage, transfer: Transferable[]): void;
};

let acknowledged: (() => void) | undefined;

function send(m: GgufJobMessage, transfer: Transferable[] = []): void {
  scope.postMessage(m, transfer);
}

/** Hands `bytes` to the page and resolves once it has written them. */
function chunk(bytes: Uint8Array, position: number): Promise<void> {
  // A copy is transferred: the writer still reads a piece after writing it (the header's length)
  // and reuses its padding, so the piece itself must not be detached.
  const own = bytes.slice();
  const written = new Promise<void>((resolve) => { acknowledged = resolve; });
  send({ kind: "chunk", position, bytes: own }, [own.buffer as ArrayBuffer]);
  return written;
}

async function run(req: GgufJobRequest): Promise<void> {
  const model = ggufModel([await readGguf(blobSource(req.file, req.file.name), { name: req.file.name })], req.file.name);
  let lastProgress = -1;
  const sink = { write: (bytes: Uint8Array, position: number) => chunk(bytes, position) };
  const { layout } = await quantizeGgufModel(model, sink, {
    preset: req.preset, allowRequantize: req.allowRequantize,
    onPlan: ({ plan }, planned) => send({
      kind: "plan", preset: plan.preset.name, size: planned.size,
      tensors: plan.tensors.map((p) => ({ name: p.name, from: p.from.name, to: p.to.name, ...(p.fallbackFrom ? { fallbackFrom: p.fallbackFrom.name } : {}) })),
    }),
    onProgress: (done, total) => {
      // A message per percent at most.
      const pct = Math.floor((done / total) * 100);
      if (pct === lastProgress) return;
      lastProgress = pct;
      send({ kind: "progress", done, total });
    },
  });
  send({ kind: "done", size: layout.size });
}

scope.onmessage = (e) => {
  if (e.data === "written") {
    const f = acknowledged;
    acknowledged = undefined;
    f?.();
    return;
  }
  run(e.data as GgufJobRequest).catch((err: unknown) => {
    const x = err as { name?: unknown; code?: unknown; message?: unknown };
    send({
      kind: "error", name: typeof x?.name === "string" ? x.name : "Error", message: typeof x?.message === "string" ? x.message : String(err),
      ...(typeof x?.code === "string" ? { code: x.code } : {}),
    });
  });
};

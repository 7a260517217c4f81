/**
 * A band worker of the GGUF panel: quantizes the bands the job's worker (ggufWorker.ts) hands it,
 * with the core's quantizeBand, the function tensorcast/node's worker threads run.
 */
import { ggmlType, quantizeBand } from "tensorcast-gguf-job";
import type { BandReply, BandRequest } from "./ggufMessages.js";

const scope = globalThis as unknown as {
  onmessage: ((e: MessageEvent<BandRequest>) => void) | null;
  postMessage(message: BandReply, transfer: Transferable[]): void;
};

scope.onmessage = (e) => {
  const r = e.data;
  try {
    const bytes = quantizeBand(r.tensor, ggmlType(r.from), ggmlType(r.to), r.raw, r.ncols, r.firstBlock, r.imatrix);
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
    scope.postMessage({ id: r.id, bytes: own }, [own.buffer as ArrayBuffer]);
  } catch (err) {
    const x = err as { name?: unknown; code?: unknown; message?: unknown };
    scope.postMessage({
      id: r.id, error: {
        name: typeof x?.name === "string" ? x.name : "Error", message: typeof x?.message === "string" ? x.message : String(err),
        ...(typeof x?.code === "string" ? { code: x.code } : {}),
      },
    }, []);
  }
};

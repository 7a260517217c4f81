/** The tensor box's worker: one request in, its outcome out (see wire.ts). */
import { runToWire } from "./wire.js";
import type { TensorRequest } from "./tensorBox.js";

const scope = globalThis as unknown as {
  onmessage: ((e: MessageEvent<{ id: number; request: TensorRequest }>) => void) | null;
  postMessage(message: unknown, transfer: Transferable[]): void;
};

scope.onmessage = (e) => {
  const { id, request } = e.data;
  try {
    const { outcome, transfer } = runToWire(request);
    scope.postMessage({ id, outcome }, transfer);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    scope.postMessage({ id, outcome: { inputError: { text: `the worker failed: ${message}`, message } } }, []);
  }
};

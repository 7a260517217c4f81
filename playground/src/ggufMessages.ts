/** What the GGUF panel (ggufPanel.ts) and its worker (ggufWorker.ts) say to each other. */

/** Page to worker: the job, once (a GGUF model's, or a Hugging Face folder's); then an acknowledgement of each chunk written. */
export type GgufWorkerRequest = GgufJobRequest | HfJobRequest;

/** A GGUF model quantized to a preset. */
export interface GgufJobRequest {
  readonly kind?: undefined;
  readonly file: File;
  /** An importance matrix (llama-imatrix's .gguf or legacy .dat), as --imatrix FILE gives one. */
  readonly imatrix?: File;
  readonly preset: string;
  readonly allowRequantize: boolean;
}

/**
 * A Hugging Face folder made a GGUF: convert_hf_to_gguf's outtype (`convert DIR --to T`), or a
 * llama-quantize preset (`quantize DIR --mode PRESET`).
 */
export interface HfJobRequest {
  readonly kind: "hf";
  /** The folder's own name (gguf-py names the model after it). */
  readonly folderName: string;
  /** Its plain files, by name. */
  readonly files: readonly { readonly name: string; readonly file: File }[];
  /** The names of its subfolders (listed, never read). */
  readonly subfolders: readonly string[];
  readonly mode: "convert" | "quantize";
  /** float32, float16, bfloat16, q8_0 or auto (convert). */
  readonly outtype: string;
  /** A llama-quantize preset (quantize). */
  readonly preset: string;
}

/** A tensor of the output, as the plan made it. */
export interface GgufJobTensor {
  readonly name: string;
  readonly from: string;
  readonly to: string;
  readonly fallbackFrom?: string;
}

/** Worker to page. */
export type GgufJobMessage =
  /** The plan: every tensor's types and the output's size, before any byte is written. */
  | { readonly kind: "plan"; readonly preset: string; readonly size: number; readonly bandWorkers: number; readonly tensors: readonly GgufJobTensor[] }
  /** Output bytes at `position` (each chunk follows the last); the worker waits for an acknowledgement. */
  | { readonly kind: "chunk"; readonly position: number; readonly bytes: Uint8Array }
  | { readonly kind: "progress"; readonly done: number; readonly total: number }
  | { readonly kind: "done"; readonly size: number }
  /** A failure: the library's TensorcastError (name, code, message) or another error's name and message. */
  | ({ readonly kind: "error" } & ErrorReport);

/** Job worker to a band worker: one band to quantize (quantizeBand's arguments, types by name). */
export interface BandRequest {
  readonly id: number;
  readonly tensor: string;
  readonly from: string;
  readonly to: string;
  readonly raw: Uint8Array;
  readonly ncols: number;
  readonly firstBlock: number;
  readonly imatrix?: Float32Array;
}

/** A failure as it crosses a worker's boundary: the error's name, code (a TensorcastError's) and message. */
export interface ErrorReport {
  readonly name: string;
  readonly code?: string;
  readonly message: string;
}

/** A band worker's answer: the band's bytes, or its error. */
export type BandReply = { readonly id: number; readonly bytes: Uint8Array; readonly error?: undefined } | { readonly id: number; readonly error: ErrorReport };

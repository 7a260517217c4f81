/** What fuzz.test.ts and its child processes hand each other (as JSON). */
import type { FileFormat } from "../../src/node/index.js";

export interface ManifestCase {
  readonly index: number;
  /** The formats of fuzz.test.ts' classes (PyTorch checkpoints and GGUF have classes of their own, pytorch.test.ts and gguf.test.ts). */
  readonly format: Exclude<FileFormat, "pytorch" | "gguf">;
  readonly path: string;
  readonly seedPath?: string;
  readonly label: string;
}

export interface Manifest {
  /** Where each case gets its own folder for outputs. */
  readonly dir: string;
  readonly cases: readonly ManifestCase[];
}

/** "ok", "E:<code>" (a TensorcastError), or "X:<what>" (anything else: a crash). */
export type OpOutcome = string;

/** One tensor as tensorcast read it: `data` is the raw layout as hex (or "sha:" + SHA-256 when large); absent for strings. */
export interface TensorRead {
  name: string;
  dtype: string;
  /** Its ONNX data_type number. */
  onnx: number;
  shape: number[];
  data?: string;
}

/** A file tensorcast accepted (an input, or an output it wrote), for the peers to read too. */
export interface FileRead {
  readonly path: string;
  readonly format: FileFormat;
  /** "input", "input-decoded" (only the in-memory decoder accepted it), or the conversion that wrote it. */
  readonly role: string;
  readonly tensors: TensorRead[];
}

export interface CaseResult {
  readonly index: number;
  readonly ops: Record<string, OpOutcome>;
  /** Anything wrong that is not an exception: "corrupt output: ...", "inconsistent: ...", "wrong result: ...". */
  readonly problems: string[];
  readonly files: FileRead[];
  readonly rss: number;
  /** Milliseconds the whole case took. */
  readonly ms: number;
}

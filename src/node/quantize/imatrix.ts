/**
 * An importance matrix file, as `tensorcast quantize --imatrix FILE` reads it: the core's reader
 * (src/io/gguf/imatrix.ts, llama-imatrix's GGUF file or its legacy .dat) over the file at a path.
 */
import { TensorcastError } from "../../index.js";
import { readImatrix, type Imatrix } from "../../io/gguf/imatrix.js";
import { RandomAccessFile, systemError } from "../io/file.js";

export type { Imatrix } from "../../io/gguf/imatrix.js";

/**
 * Reads the importance matrix at `path` (GGUF by its magic, else the legacy format).
 * @throws TensorcastError as readImatrix; IO_ERROR.
 */
export async function readImatrixFile(path: string): Promise<Imatrix> {
  let file: RandomAccessFile;
  try {
    file = await RandomAccessFile.open(path);
  } catch (e) {
    if (e instanceof TensorcastError) throw e;
    throw systemError(path, "read it", e);
  }
  try {
    return await readImatrix(file, path);
  } finally {
    await file.close();
  }
}

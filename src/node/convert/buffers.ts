/**
 * Chunk buffers reused from one chunk to the next. A conversion streams a file through buffers of
 * a few sizes (a chunk's input, its output); allocating them afresh costs a page fault per 4 KiB
 * on first write (1,024 per 4 MiB chunk) and leaves garbage that V8 frees late, which is what
 * made the peak memory of a 1 GiB conversion 340-390 MiB (docs/performance.md).
 */
import type { ResidentChunks } from "./cast-tally.js";

/** At most this many free buffers are kept per size: more than the chunks a conversion has in flight. */
const KEEP = 8;
/**
 * At most this many bytes are kept in all: every tensor's last chunk has a size of its own, and a
 * checkpoint of thousands of tensors must not keep a buffer of each.
 * @example
 * buffers.give(new Uint8Array(KEEP_BYTES + 1)); // dropped: larger than the whole allowance
 */
export const KEEP_BYTES = 64 * 1024 * 1024;

/**
 * Free buffers by byte length. A buffer given back must be the giver's alone (no one else holds a
 * view of it): `take` hands it out again as new. The sizes given back least recently are dropped
 * first when more than KEEP_BYTES would be kept.
 * @example
 * const buffers = new ChunkBuffers();
 * const a = buffers.take(4096);   // a fresh Uint8Array(4096)
 * buffers.give(a);
 * buffers.take(4096) === a;       // true
 */
export class ChunkBuffers {
  /** In the order their sizes were last given back, oldest first. */
  private readonly free = new Map<number, Uint8Array[]>();
  private kept = 0;

  /**
   * With `resident`, buffers come from its slots while it has one free (WebAssembly memory the
   * cast kernels work in: kernel.ts castAndMeasure then copies nothing), else as without.
   */
  constructor(private readonly resident?: ResidentChunks) {}

  /** Bytes held for reuse now. */
  get keptBytes(): number {
    return this.kept;
  }

  /**
   * A buffer of exactly `length` bytes: a resident slot, or one spanning its whole ArrayBuffer
   * (so it can be transferred).
   */
  take(length: number): Uint8Array {
    const slot = this.resident?.take(length);
    if (slot) return slot;
    const list = this.free.get(length);
    const b = list?.pop();
    if (!b) return new Uint8Array(length);
    if (list!.length === 0) this.free.delete(length);
    this.kept -= length;
    return b;
  }

  /** Frees a resident slot; keeps other `bytes` for a later `take` when they span a whole, ordinary ArrayBuffer; otherwise drops them. */
  give(bytes: Uint8Array): void {
    if (this.resident?.give(bytes)) return;
    const length = bytes.length;
    const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && !(bytes.buffer instanceof SharedArrayBuffer);
    if (!whole || length === 0 || length > KEEP_BYTES) return;
    const list = this.free.get(length) ?? [];
    // Twice in the list would be one buffer for two chunks.
    if (list.length >= KEEP || list.includes(bytes)) return;
    this.free.delete(length);
    for (const [size, older] of this.free) {
      if (this.kept + length <= KEEP_BYTES) break;
      this.kept -= size * older.length;
      this.free.delete(size);
    }
    if (this.kept + length > KEEP_BYTES) {
      if (list.length > 0) this.free.set(length, list);
      return;
    }
    list.push(bytes);
    this.kept += length;
    this.free.set(length, list);
  }
}

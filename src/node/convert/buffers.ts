/**
 * Chunk buffers reused from one chunk to the next. A conversion streams a file through buffers of
 * a few sizes (a chunk's input, its output); allocating them afresh costs a page fault per 4 KiB
 * on first write (1,024 per 4 MiB chunk) and leaves garbage that V8 frees late, which is what
 * made the peak memory of a 1 GiB conversion 200-360 MiB (docs/performance.md, issue 16).
 */

/** At most this many free buffers are kept per size: more than the chunks a conversion has in flight. */
const KEEP = 8;

/**
 * Free buffers by byte length. A buffer given back must be the giver's alone (no one else holds a
 * view of it): `take` hands it out again as new.
 * @example
 * const buffers = new ChunkBuffers();
 * const a = buffers.take(4096);   // a fresh Uint8Array(4096)
 * buffers.give(a);
 * buffers.take(4096) === a;       // true
 */
export class ChunkBuffers {
  private readonly free = new Map<number, Uint8Array[]>();

  /** A buffer of exactly `length` bytes, spanning its whole ArrayBuffer (so it can be transferred). */
  take(length: number): Uint8Array {
    return this.free.get(length)?.pop() ?? new Uint8Array(length);
  }

  /** Keeps `bytes` for a later `take` when it spans a whole, ordinary ArrayBuffer; otherwise drops it. */
  give(bytes: Uint8Array): void {
    const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && !(bytes.buffer instanceof SharedArrayBuffer);
    if (!whole || bytes.length === 0) return;
    let list = this.free.get(bytes.length);
    if (!list) this.free.set(bytes.length, (list = []));
    // Twice in the list would be one buffer for two chunks.
    if (list.length < KEEP && !list.includes(bytes)) list.push(bytes);
  }
}

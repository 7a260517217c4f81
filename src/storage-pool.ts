/**
 * Reuse of large output storage that its owner has released with `Tensor.dispose()`.
 *
 * Why: a fresh multi-megabyte array costs one page fault per 4 KiB page on first write (8,192 for
 * 32 MiB), several times the time of the conversion that fills it (docs/performance.md). An
 * ArrayBuffer whose pages were already written can be handed to the next cast() instead.
 *
 * Why it is safe: a buffer enters the pool only through `ArrayBuffer.prototype.transfer()`, which
 * moves the memory to a new ArrayBuffer object known only to the pool and detaches the old one, so
 * every typed array a user still holds on it reads as empty; it is never the memory of two live
 * tensors. Only buffers this library allocated for one output (`markOwned`) are pooled: a storage
 * the caller supplied is never detached. Without `transfer` (Node 20, older browsers) release does
 * nothing and storage is left to the garbage collector.
 *
 * Browser-safe: no Node built-ins.
 */

/**
 * Outputs smaller than this are allocated fresh: their page faults are cheap, and glibc serves
 * them from memory already mapped anyway; pooling them would only hold memory.
 * @example cast(small, "float16").dispose() // under 1 MiB: nothing happens
 */
export const POOL_MIN_BYTES = 1 << 20;
/**
 * The most bytes the pool keeps; a release beyond it is detached all the same but not kept (the
 * garbage collector frees it), so the pool never holds more than this.
 * @example POOL_MAX_BYTES // 268435456
 */
export const POOL_MAX_BYTES = 256 << 20;

type Transferable = ArrayBuffer & { transfer?: () => ArrayBuffer; readonly detached?: boolean };

const owned = new WeakSet<ArrayBuffer>();
const free = new Map<number, ArrayBuffer[]>();
let pooledBytes = 0;

/**
 * Whether this runtime can release storage (it has ArrayBuffer.prototype.transfer: Node 22+,
 * current browsers; not Node 20).
 * @example canReleaseStorage() // true on Node 24
 */
export function canReleaseStorage(): boolean {
  return typeof (ArrayBuffer.prototype as Transferable).transfer === "function";
}

/**
 * A released buffer of exactly `byteLength` bytes (its old contents left in place: the caller
 * overwrites or clears them), or undefined when none is pooled or the size is below POOL_MIN_BYTES.
 * The buffer is removed from the pool and marked owned, so it can be released again.
 * @example const b = takeBuffer(32 << 20) ?? new ArrayBuffer(32 << 20);
 */
export function takeBuffer(byteLength: number): ArrayBuffer | undefined {
  if (byteLength < POOL_MIN_BYTES) return undefined;
  const list = free.get(byteLength);
  const b = list?.pop();
  if (!b) return undefined;
  if (list!.length === 0) free.delete(byteLength);
  pooledBytes -= byteLength;
  owned.add(b);
  return b;
}

/**
 * Marks `buffer` as allocated by this library for one output, so that `releaseBuffer` may pool it
 * (buffers under POOL_MIN_BYTES are not marked).
 * @example const data = new Uint16Array(n); markOwned(data.buffer);
 */
export function markOwned(buffer: ArrayBuffer): void {
  if (buffer.byteLength >= POOL_MIN_BYTES) owned.add(buffer);
}

/**
 * Detaches `buffer` and pools its memory, if this library allocated it (markOwned), the runtime
 * has `transfer` and the pool has room. Returns whether it was detached. A buffer not owned (a
 * caller's storage, a SharedArrayBuffer) is left alone.
 *
 * @example releaseBuffer(t.data.buffer) // t.data.length is now 0; the next cast() of that size reuses the memory
 */
export function releaseBuffer(buffer: ArrayBufferLike): boolean {
  const b = buffer as Transferable;
  if (!owned.has(b) || typeof b.transfer !== "function" || b.detached === true) return false;
  owned.delete(b);
  const moved = b.transfer(); // zero-copy: the same memory under a new object; every old view detached
  if (pooledBytes + moved.byteLength <= POOL_MAX_BYTES) {
    let list = free.get(moved.byteLength);
    if (!list) free.set(moved.byteLength, (list = []));
    list.push(moved);
    pooledBytes += moved.byteLength;
  }
  return true;
}

/**
 * Empties the pool (tests; or to give the memory back to the garbage collector).
 * @example clearStoragePool(); pooledStorageBytes() // 0
 */
export function clearStoragePool(): void {
  free.clear();
  pooledBytes = 0;
}

/**
 * Bytes the pool now holds.
 * @example cast(x, "float16").dispose(); pooledStorageBytes() // 2 * x.size on Node 22+
 */
export function pooledStorageBytes(): number {
  return pooledBytes;
}

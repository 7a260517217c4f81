/**
 * A state dict tensor's elements in row-major order, read a run at a time from the file: a
 * contiguous view is one range of its storage; any other view (a transpose, a slice with steps,
 * a broadcast stride of 0) is gathered element by element from the storage's bytes, so it is
 * written out as `tensor.contiguous()` would be. Bytes are swapped to little-endian when the
 * checkpoint says it is big-endian.
 *
 * Memory stays bounded: a gathered run reads the span of the storage its elements touch when that
 * is at most 64 MiB (or four times the run), else it reads each element through a 1 MiB window.
 */
import type { StateDictTensor } from "./checkpoint.js";
import type { ByteSource } from "./zip.js";

/** Whether a view is row-major contiguous (strides of size-1 dimensions do not matter, as in torch). */
export function isRowMajor(shape: readonly number[], stride: readonly number[]): boolean {
  let expected = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] === 1) continue;
    if (stride[i] !== expected) return false;
    expected *= shape[i];
  }
  return true;
}

const SPAN_LIMIT = 64 * 1024 * 1024;
const WINDOW = 1024 * 1024;

/** Reverses each `item`-byte element of `bytes` in place. */
export function swapBytes(bytes: Uint8Array, item: number): void {
  if (item === 1) return;
  for (let i = 0; i + item <= bytes.length; i += item) {
    for (let a = i, b = i + item - 1; a < b; a++, b--) {
      const x = bytes[a];
      bytes[a] = bytes[b];
      bytes[b] = x;
    }
  }
}

/**
 * The storage element index of each of elements [start, start + count) of a view, in order,
 * handed to `visit` (no array of them is made).
 */
function forEachIndex(t: StateDictTensor["tensor"], start: number, count: number, visit: (k: number, index: number) => void): void {
  const { shape, stride, offset } = t;
  const n = shape.length;
  const idx = new Array<number>(n).fill(0);
  let rest = start;
  for (let i = n - 1; i >= 0; i--) {
    idx[i] = rest % shape[i];
    rest = Math.floor(rest / shape[i]);
  }
  let at = offset;
  for (let i = 0; i < n; i++) at += idx[i] * stride[i];
  for (let k = 0; k < count; k++) {
    visit(k, at);
    // Odometer step: the last dimension first.
    for (let i = n - 1; i >= 0; i--) {
      idx[i]++;
      at += stride[i];
      if (idx[i] < shape[i]) break;
      at -= idx[i] * stride[i];
      idx[i] = 0;
    }
  }
}

/**
 * The little-endian bytes of elements [start, start + count) of `t`, row-major.
 * @example await readStateDictTensor(file, t, 0, t.tensor.shape.reduce((a, b) => a * b, 1), false)
 */
export async function readStateDictTensor(src: ByteSource, t: StateDictTensor, start: number, count: number, bigEndian: boolean, into?: Uint8Array): Promise<Uint8Array> {
  const item = t.dtype.bits / 8;
  const base = t.storageOffset;
  const v = t.tensor;
  let out: Uint8Array;
  if (count === 0) return new Uint8Array(0);
  if (isRowMajor(v.shape, v.stride)) {
    const at = base + (v.offset + start) * item;
    out = await src.read(at, count * item, into && into.length === count * item ? into : undefined);
  } else {
    out = into && into.length === count * item ? into : new Uint8Array(count * item);
    let lo = Infinity;
    let hi = -Infinity;
    forEachIndex(v, start, count, (_, i) => {
      if (i < lo) lo = i;
      if (i > hi) hi = i;
    });
    const span = (hi - lo + 1) * item;
    if (span <= Math.max(SPAN_LIMIT, 4 * count * item)) {
      const bytes = await src.read(base + lo * item, span);
      forEachIndex(v, start, count, (k, i) => out.set(bytes.subarray((i - lo) * item, (i - lo + 1) * item), k * item));
    } else {
      // Gathered through a window; the indices are visited again for each window read.
      const indices: number[] = [];
      forEachIndex(v, start, count, (_, i) => indices.push(i));
      let windowStart = -1;
      let window: Uint8Array = new Uint8Array(0);
      for (let k = 0; k < indices.length; k++) {
        const pos = indices[k] * item;
        if (windowStart < 0 || pos < windowStart || pos + item > windowStart + window.length) {
          windowStart = pos;
          window = await src.read(base + pos, Math.min(WINDOW, v.storage.bytes - pos));
        }
        out.set(window.subarray(pos - windowStart, pos - windowStart + item), k * item);
      }
    }
  }
  if (bigEndian) {
    // Never swap the caller's shared bytes: `out` is this read's own.
    swapBytes(out, item);
  }
  return out;
}

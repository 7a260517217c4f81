/**
 * Where to put a chunk in a WebAssembly memory so that copying it to or from an ordinary typed
 * array runs at memcpy speed.
 *
 * When source and destination sit at the same offset within a 4 KiB page (both page-aligned, as a
 * WebAssembly memory and every large ArrayBuffer are, and the chunk regions are multiples of 4 KiB),
 * the copy behind `TypedArray.prototype.set` slows down about tenfold on this project's x86-64
 * machines (AMD EPYC, glibc's memmove: measured 400-650 M float32/s against 4,400-6,900 M/s for
 * the same 16 KiB copies at any other distance; bench/ggml-dequant.ts's "arrays" column). Putting
 * the chunk half a page away from the array's offset avoids it whatever the caller's offset.
 *
 * Addresses are known only up to the array's buffer base; a page-aligned base is the case that
 * matters (a misaligned one already avoids the slow case most of the time).
 */
export const STAGGER_SLACK = 4096;

/**
 * An offset in [base, base + STAGGER_SLACK) of the same alignment mod 4 as `byteOffset`, half a
 * page away from `byteOffset` modulo 4 KiB. `base` must be a multiple of 4096 with STAGGER_SLACK
 * bytes to spare after the region it starts.
 * @example staggered(8192, 0) // 10240: 2048 bytes off the page-aligned array it is copied to
 */
export function staggered(base: number, byteOffset: number): number {
  return base + ((byteOffset + 2048) & 4095);
}

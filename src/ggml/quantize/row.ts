/**
 * The shape every GGML row encoder has, and the little-endian stores they share.
 *
 * Browser-safe: no Node built-ins.
 */

/**
 * Encodes the `n` float32 values of one row, from index `xAt` of `x`, into whole blocks from byte
 * `yAt` of `y`. `qw` is the row's importance weights (one per column, from index 0) or undefined.
 * Every byte of the row's blocks is written.
 */
export type RowEncoder = (x: Float32Array, xAt: number, n: number, y: Uint8Array, yAt: number, qw: Float32Array | undefined) => void;

export function put16(y: Uint8Array, at: number, v: number): void {
  y[at] = v & 0xff;
  y[at + 1] = (v >>> 8) & 0xff;
}

export function put32(y: Uint8Array, at: number, v: number): void {
  y[at] = v & 0xff;
  y[at + 1] = (v >>> 8) & 0xff;
  y[at + 2] = (v >>> 16) & 0xff;
  y[at + 3] = (v >>> 24) & 0xff;
}

export function get16(y: Uint8Array, at: number): number {
  return y[at] | (y[at + 1] << 8);
}

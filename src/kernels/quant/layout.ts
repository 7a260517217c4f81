/**
 * Which scale each element of a quantized tensor uses. Per-tensor, per-axis and blocked
 * quantization are one walk: an element at (outer o, axis position j, inner k) of a tensor viewed as
 * [outer, axisLength, inner] uses scale number
 *   o * strideOuter + floor(j / blockSize) * strideBlock + k * strideInner.
 * Per-tensor has every stride 0; per-axis has strideBlock 1 and blockSize 1; blocked has the
 * scale tensor's own row-major strides, with ceil(axisLength / blockSize) blocks on the axis (the
 * last one possibly partial).
 */

/** How elements map to scales. Build one with `tensorLayout`, `axisLayout` or `blockLayout`. */
export interface QuantLayout {
  /** Elements in the tensor. */
  readonly count: number;
  /** Product of the dimensions before the axis. */
  readonly outer: number;
  /** The axis' length (1 for per-tensor). */
  readonly axisLength: number;
  /** Product of the dimensions after the axis. */
  readonly inner: number;
  /** Consecutive axis positions sharing a scale: 1 per-axis, the block size when blocked. */
  readonly blockSize: number;
  readonly strideOuter: number;
  readonly strideBlock: number;
  readonly strideInner: number;
  /** Number of scales (and zero points). */
  readonly scaleCount: number;
}

function product(shape: readonly number[], from: number, to: number): number {
  let p = 1;
  for (let i = from; i < to; i++) p *= shape[i];
  return p;
}

/** One scale for the whole tensor. */
export function tensorLayout(shape: readonly number[]): QuantLayout {
  const count = product(shape, 0, shape.length);
  return { count, outer: 1, axisLength: 1, inner: count, blockSize: 1, strideOuter: 0, strideBlock: 0, strideInner: 0, scaleCount: 1 };
}

/** One scale per position along `axis` (already normalised to [0, rank)). */
export function axisLayout(shape: readonly number[], axis: number): QuantLayout {
  const axisLength = shape[axis];
  return {
    count: product(shape, 0, shape.length), outer: product(shape, 0, axis), axisLength, inner: product(shape, axis + 1, shape.length),
    blockSize: 1, strideOuter: 0, strideBlock: 1, strideInner: 0, scaleCount: axisLength,
  };
}

/**
 * One scale per block of `blockSize` consecutive positions along `axis` and per position on every
 * other axis: the scale tensor has the input's shape with ceil(shape[axis] / blockSize) on the axis.
 */
export function blockLayout(shape: readonly number[], axis: number, blockSize: number): QuantLayout {
  const axisLength = shape[axis];
  const blocks = Math.ceil(axisLength / blockSize);
  const outer = product(shape, 0, axis);
  const inner = product(shape, axis + 1, shape.length);
  return {
    count: outer * axisLength * inner, outer, axisLength, inner, blockSize,
    strideOuter: blocks * inner, strideBlock: inner, strideInner: 1, scaleCount: outer * blocks * inner,
  };
}

/** The scale shape a blocked layout expects: `shape` with ceil(shape[axis] / blockSize) on `axis`. */
export function blockedScaleShape(shape: readonly number[], axis: number, blockSize: number): number[] {
  return shape.map((d, i) => (i === axis ? Math.ceil(d / blockSize) : d));
}

/**
 * Writes the scale number of elements start .. start + n - 1 into out[0 .. n). No allocation: the
 * (outer, axis, inner) position is computed once and then stepped.
 */
export function scaleIndices(layout: QuantLayout, start: number, n: number, out: Int32Array): void {
  const { axisLength, inner, blockSize, strideOuter, strideBlock, strideInner } = layout;
  if (strideOuter === 0 && strideBlock === 0) {
    out.fill(0, 0, n);
    return;
  }
  let k = start % inner;
  const rest = (start - k) / inner;
  let j = rest % axisLength;
  let o = (rest - j) / axisLength;
  for (let t = 0; t < n; t++) {
    out[t] = o * strideOuter + Math.floor(j / blockSize) * strideBlock + k * strideInner;
    if (++k === inner) {
      k = 0;
      if (++j === axisLength) {
        j = 0;
        o++;
      }
    }
  }
}

/** The scale number of element `index` (for tests and one-off lookups; loops use `scaleIndices`). */
export function scaleIndexOf(layout: QuantLayout, index: number): number {
  const k = index % layout.inner;
  const rest = (index - k) / layout.inner;
  const j = rest % layout.axisLength;
  const o = (rest - j) / layout.axisLength;
  return o * layout.strideOuter + Math.floor(j / layout.blockSize) * layout.strideBlock + k * layout.strideInner;
}

/**
 * A band of `rows` rows of a [rows, cols] matrix that share one row of scales, one per block of
 * `blockCols` columns (the last possibly partial): element (r, c) uses scale floor(c / blockCols).
 * A 2-D block grid (FP8 checkpoints' 128x128 tiles) is a sequence of such bands.
 */
export function rowBandLayout(rows: number, cols: number, blockCols: number): QuantLayout {
  const blocks = Math.ceil(cols / blockCols);
  return {
    count: rows * cols, outer: rows, axisLength: cols, inner: 1, blockSize: blockCols,
    strideOuter: 0, strideBlock: 1, strideInner: 0, scaleCount: blocks,
  };
}

/**
 * Reading a quantized checkpoint tensor's dequantized values a run of rows at a time, so that the
 * way back (`convert QDIR --to T`) and the `inspect` / `diff` views never hold a whole tensor.
 *
 * A logical tensor is read as a matrix: FP8 `[rows, cols]` as it is, MXFP4 experts `[E, in, out]`
 * as `[E * in, out]` (gpt-oss' logical layout, rows contiguous). What each read keeps:
 * - FP8: the rows asked for and the one row of inverse scales of their band (a band is R rows
 *   sharing a row of scales; dequantization is per element, so any run of rows inside a band is
 *   dequantized alone with that scale row, equal to the whole tensor's bytes).
 * - MXFP4: the packed blocks and scales of one expert (in * out / 2 + in * out / 32 bytes; gpt-oss
 *   120b's largest: 8.3 MB), kept while the reads stay in that expert, and the groups of 32 input
 *   rows the rows asked for touch. An expert's packed matrix is stored transposed ([out, in]),
 *   so reading it a row of the output at a time would take `out` small reads per run.
 */
import { TensorcastError, type DType } from "../../index.js";
import {
  blockLayout, checkScales, dequantizeBlocks, NV_BLOCK, nvfp4DequantizeRows, fp8BlockDequantize, MX_BLOCK, mxfp4Dequantize, rowBandLayout, storageOfBytes, transposeMatricesInto,
} from "../../kernels/quant/index.js";
import { dtype } from "../../index.js";
import type { FileTensor } from "../io/tensors.js";

/** Bytes of dequantized output per run (rows are whole: at least one row). */
export const RUN_BYTES = 4 * 1024 * 1024;

/** A quantized tensor's parts as a file holds them, and the logical tensor they make. */
export interface LogicalTensor {
  readonly name: string;
  readonly scheme: "fp8" | "fp8-ue8m0" | "mxfp4" | "nvfp4";
  readonly shape: readonly number[];
  readonly parts: readonly FileTensor[];
}

const E8M0 = dtype("float8e8m0");
const F8E4M3 = dtype("float8e4m3fn");
const F4 = dtype("float4e2m1");
/** The scale types fp8BlockDequantize takes (others are refused there, by it). */
const SCALE_TYPES = new Set(["float32", "float16", "bfloat16", "float8e8m0"]);
const OUTPUT_TYPES = new Set(["float32", "float16", "bfloat16"]);

/**
 * One read buffer reused run after run (FileTensor.read's `into`): a fresh buffer per run is
 * garbage the collector frees late, tens of MiB of resident memory between collections.
 */
export class ReadBuffer {
  private buffer = new Uint8Array(0);

  /** A view of exactly `n` bytes (the contents of an earlier view are overwritten). */
  take(n: number): Uint8Array {
    if (this.buffer.length < n) this.buffer = new Uint8Array(n);
    return this.buffer.subarray(0, n);
  }
}

function scaleValueType(t: DType): DType {
  return t.name === "uint8" ? E8M0 : t;
}

/** Reads runs of rows of a logical tensor's dequantized values, in `to`. */
export class LogicalRows {
  /** Rows of the logical matrix (FP8: rows; MXFP4: experts * in). */
  readonly rows: number;
  /** Elements per row (FP8: cols; MXFP4: out). */
  readonly cols: number;
  /** Rows per run: whole rows of about RUN_BYTES of output (MXFP4: whole groups of 32 when they fit). */
  readonly runRows: number;
  private readonly elementBytes: number;
  private scaleRow: { band: number; bytes: Uint8Array } | undefined;
  private expert: { e: number; blocks: Uint8Array; scales: Uint8Array } | undefined;
  private readonly buffer = new ReadBuffer();
  private readonly output = new ReadBuffer();
  private readonly transposed = new ReadBuffer();
  private readonly scaleBuffer = new ReadBuffer();
  private readonly expertBlocks = new ReadBuffer();
  private readonly expertScales = new ReadBuffer();

  constructor(readonly logical: LogicalTensor, readonly to: DType) {
    const [w, s] = logical.parts;
    if (!OUTPUT_TYPES.has(to.name)) throw new TensorcastError("UNSUPPORTED_TYPE", `dequantize ${logical.name}: output type ${to.name} is not one of float32, float16, bfloat16`);
    this.elementBytes = to.bits / 8;
    if (logical.scheme === "nvfp4") {
      const [rows, half] = w.shape;
      if (w.shape.length !== 2 || s.shape.length !== 2 || s.shape[0] !== rows || s.shape[1] * NV_BLOCK !== half * 2) {
        throw new TensorcastError("SHAPE_MISMATCH", `nvfp4 dequantize: weight_packed [${w.shape.join(", ")}] and weight_scale [${s.shape.join(", ")}] are not [out, in/2] and [out, in/16]`);
      }
      this.rows = rows;
      this.cols = half * 2;
      this.runRows = Math.max(1, Math.floor(RUN_BYTES / Math.max(1, this.cols * this.elementBytes)));
    } else if (logical.scheme === "mxfp4") {
      const [experts, outDim, groups, half] = w.shape;
      if (w.shape.length !== 4 || half !== MX_BLOCK / 2 || s.shape.length !== 3 || [experts, outDim, groups].some((d, i) => d !== s.shape[i])) {
        throw new TensorcastError("SHAPE_MISMATCH", `mxfp4 dequantize: blocks [${w.shape.join(", ")}] and scales [${s.shape.join(", ")}] are not [E, out, G, 16] and [E, out, G]`);
      }
      this.rows = experts * groups * MX_BLOCK;
      this.cols = outDim;
      const fit = Math.floor(RUN_BYTES / Math.max(1, outDim * this.elementBytes));
      this.runRows = fit >= MX_BLOCK ? fit - (fit % MX_BLOCK) : Math.max(1, fit);
    } else {
      const [rows, cols] = w.shape;
      const [sr, sc] = s.shape;
      if (w.shape.length !== 2 || s.shape.length !== 2 || sr === 0 || sc === 0 || rows % sr !== 0 || cols % sc !== 0) {
        throw new TensorcastError("INVALID_SHAPE", `fp8 dequantize: weight [${w.shape.join(", ")}] is not divisible by the scale grid [${s.shape.join(", ")}]`);
      }
      this.rows = rows;
      this.cols = cols;
      const fit = Math.max(1, Math.floor(RUN_BYTES / Math.max(1, cols * this.elementBytes)));
      const band = rows / sr;
      // One band when it fits (decoded into the reused buffer, see read), else rows inside one band.
      this.runRows = Math.min(band, fit);
    }
  }

  /**
   * Refuses a NaN, Inf, zero or negative scale anywhere in the tensor, reading the scales a run
   * at a time: called before anything is written, so a bad scale late in a tensor costs no output.
   * @throws TensorcastError INVALID_DATA naming the scale.
   */
  async checkScales(): Promise<void> {
    if (this.logical.scheme === "nvfp4") {
      const g = await this.globalScale();
      if (!(g > 0 && g < Infinity)) throw new TensorcastError("INVALID_DATA", `nvfp4 dequantize ${this.logical.parts[2].name}: global scale ${g}; it must be finite and positive`);
    }
    const s = this.logical.parts[1];
    const t = scaleValueType(s.dtype);
    const per = Math.max(1, Math.floor(RUN_BYTES / Math.max(1, t.bits / 8)));
    const what = `${this.logical.scheme.replace("-ue8m0", "")} dequantize ${s.name}`;
    for (let start = 0; start < s.size; start += per) {
      const n = Math.min(per, s.size - start);
      try {
        checkScales(storageOfBytes(await s.read(start, n), t), t, n, what);
      } catch (e) {
        // The index within the tensor, not within this run.
        if (e instanceof TensorcastError && start > 0) {
          throw new TensorcastError(e.code, e.message.replace(/scale (\d+) is/, (_m, i: string) => `scale ${start + Number(i)} is`));
        }
        throw e;
      }
    }
  }

  /** Where the run starting at row `r` ends: runRows on, or the end of r's band (FP8) or expert (MXFP4). */
  runEnd(r: number): number {
    const unit = this.logical.scheme === "mxfp4" ? this.logical.parts[1].shape[2] * MX_BLOCK : this.logical.scheme === "nvfp4" ? this.rows : this.rows / this.logical.parts[1].shape[0];
    return Math.min(this.rows, r + this.runRows, (Math.floor(r / unit) + 1) * unit);
  }

  /**
   * The dequantized bytes of rows [r0, r1). With `reuse` (only after checkScales), a run inside one
   * band or expert (MXFP4: whole groups of 32) is decoded into buffers kept by this reader and
   * overwritten by the next such read (the file job writes each run before reading the next: no
   * garbage per run); without it every read returns fresh bytes.
   */
  async read(r0: number, r1: number, reuse = false): Promise<Uint8Array> {
    if (!(Number.isInteger(r0) && Number.isInteger(r1) && r0 >= 0 && r0 <= r1 && r1 <= this.rows)) {
      throw new TensorcastError("INVALID_VALUE", `rows [${r0}, ${r1}) of ${this.logical.name}: 0 <= r0 <= r1 <= ${this.rows} expected`);
    }
    const rowBytes = this.cols * this.elementBytes;
    const piece = this.logical.scheme === "mxfp4" ? this.mxfp4Piece.bind(this) : this.logical.scheme === "nvfp4" ? this.nvfp4Piece.bind(this) : this.fp8Piece.bind(this);
    const first = await piece(r0, r1, reuse);
    // One band or expert: the kernel's output as it is (no second buffer of garbage per run).
    if (first.end === r1) return first.bytes;
    const out = new Uint8Array((r1 - r0) * rowBytes);
    out.set(first.bytes);
    for (let r = first.end; r < r1;) {
      const p = await piece(r, r1, false);
      out.set(p.bytes, (r - r0) * rowBytes);
      r = p.end;
    }
    return out;
  }

  private global: number | undefined;

  /** NVFP4's float32 global scale, read once. */
  private async globalScale(): Promise<number> {
    if (this.global === undefined) this.global = new Float32Array((await this.logical.parts[2].read(0, 1)).slice().buffer)[0];
    return this.global;
  }

  /** NVFP4 rows [r, r1): rows are independent (one scale per 16 elements of a row). */
  private async nvfp4Piece(r: number, r1: number): Promise<{ bytes: Uint8Array; end: number }> {
    const [w, s] = this.logical.parts;
    const n = (r1 - r) * this.cols;
    const packed = await w.read((r * this.cols) / 2, n / 2, this.buffer.take(n / 2));
    const scales = (await s.read((r * this.cols) / NV_BLOCK, n / NV_BLOCK)).slice();
    return { bytes: nvfp4DequantizeRows(packed, scales, r1 - r, this.cols, await this.globalScale(), this.to), end: r1 };
  }

  /** Rows from `r` up to `r1` or the end of r's band, and where they stop. */
  private async fp8Piece(r: number, r1: number, reuse: boolean): Promise<{ bytes: Uint8Array; end: number }> {
    const [w, s] = this.logical.parts;
    const [sr, sc] = s.shape;
    const bandRows = this.rows / sr;
    const band = Math.floor(r / bandRows);
    const end = Math.min(r1, (band + 1) * bandRows);
    if (this.scaleRow?.band !== band) {
      const bytes = (await s.read(band * sc, sc)).slice();
      const st = scaleValueType(s.dtype);
      if (SCALE_TYPES.has(st.name)) checkScales(storageOfBytes(bytes, st), st, sc, `fp8 dequantize ${s.name} row ${band}`);
      this.scaleRow = { band, bytes };
    }
    const q = await w.read(r * this.cols, (end - r) * this.cols, this.buffer.take((end - r) * this.cols));
    if (!reuse || end !== r1) return { bytes: fp8BlockDequantize(q, [end - r, this.cols], this.scaleRow.bytes, s.dtype, [1, sc], this.to), end };
    // fp8BlockDequantize's own steps for one band (its scale row checked when it was read), into the reused buffer (SIMD with e8m0 scales).
    const st = scaleValueType(s.dtype);
    const bytes = this.output.take((end - r) * this.cols * this.elementBytes).fill(0);
    dequantizeBlocks({
      x: q, xType: F8E4M3, scale: storageOfBytes(this.scaleRow.bytes, st), scaleType: st,
      y: storageOfBytes(bytes, this.to), yType: this.to, layout: rowBandLayout(end - r, this.cols, this.cols / sc),
    });
    return { bytes, end };
  }

  /** Rows from `r` up to `r1` or the end of r's expert, and where they stop. */
  private async mxfp4Piece(r: number, r1: number, reuse: boolean): Promise<{ bytes: Uint8Array; end: number }> {
    const [w, s] = this.logical.parts;
    const [, outDim, groups] = s.shape;
    const inDim = groups * MX_BLOCK;
    const e = Math.floor(r / inDim);
    const end = Math.min(r1, (e + 1) * inDim);
    const rowBlocks = groups * (MX_BLOCK / 2);
    if (this.expert?.e !== e) {
      // Into buffers kept from expert to expert (a reader may return other bytes than `into`).
      const into = async (t: FileTensor, start: number, count: number, b: ReadBuffer): Promise<Uint8Array> => {
        const dst = b.take(count);
        const got = await t.read(start, count, dst);
        if (got !== dst) dst.set(got);
        return dst;
      };
      this.expert = {
        e,
        blocks: await into(w, e * outDim * rowBlocks, outDim * rowBlocks, this.expertBlocks),
        scales: await into(s, e * outDim * groups, outDim * groups, this.expertScales),
      };
    }
    const i0 = r - e * inDim;
    const i1 = end - e * inDim;
    const g0 = Math.floor(i0 / MX_BLOCK);
    const g1 = Math.ceil(i1 / MX_BLOCK);
    const k = g1 - g0;
    // The touched groups of every output row: [1, out, k, 16] and [1, out, k].
    const blocks = reuse ? this.buffer.take(outDim * k * (MX_BLOCK / 2)) : new Uint8Array(outDim * k * (MX_BLOCK / 2));
    const scales = reuse ? this.scaleBuffer.take(outDim * k) : new Uint8Array(outDim * k);
    for (let o = 0; o < outDim; o++) {
      blocks.set(this.expert.blocks.subarray(o * rowBlocks + g0 * (MX_BLOCK / 2), o * rowBlocks + g1 * (MX_BLOCK / 2)), o * k * (MX_BLOCK / 2));
      scales.set(this.expert.scales.subarray(o * groups + g0, o * groups + g1), o * k);
    }
    const rowBytes = outDim * this.elementBytes;
    if (!reuse || end !== r1 || i0 % MX_BLOCK !== 0 || i1 % MX_BLOCK !== 0) {
      const data = mxfp4Dequantize(blocks, [1, outDim, k, MX_BLOCK / 2], scales, [1, outDim, k], this.to).data;
      const from = (i0 - g0 * MX_BLOCK) * rowBytes;
      return { bytes: data.subarray(from, from + (i1 - i0) * rowBytes), end };
    }
    // mxfp4Dequantize's own steps (the expert's scales were checked by checkScales), into reused
    // buffers: [out, 32k] decoded, then transposed to the logical [32k, out].
    const n = outDim * k * MX_BLOCK;
    const decoded = this.output.take(n * this.elementBytes).fill(0);
    dequantizeBlocks({
      x: blocks, xType: F4, scale: scales, scaleType: E8M0,
      y: storageOfBytes(decoded, this.to), yType: this.to, layout: blockLayout([outDim, k * MX_BLOCK], 1, MX_BLOCK),
    });
    const bytes = this.transposed.take(n * this.elementBytes);
    transposeMatricesInto(decoded, bytes, 1, outDim, k * MX_BLOCK, this.elementBytes);
    return { bytes, end };
  }
}

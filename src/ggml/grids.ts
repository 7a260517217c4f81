/**
 * The IQ codebooks, expanded from ggml's published index lists (grid-data.ts) by the level rule:
 * grid point k packs one level index per element (2 bits for IQ2 and IQ1, 3 bits for IQ3), low
 * bits first, and each index names a level. scripts/ggml-grid-data.py checked that this rule gives
 * ggml's own expanded tables (ggml-common.h) entry for entry. Built once, on first use.
 */
import { IQ1S, IQ2S, IQ2XS, IQ2XXS, IQ3S, IQ3XXS } from "./grid-data.js";

/** The levels each grid's indices name (iq2: 8, 25, 43 ~ 8.5 * (1, 3, 5); iq1: -1, 0, 1). */
const IQ2_LEVELS = [8, 25, 43];
const IQ3XXS_LEVELS = [4, 12, 20, 28, 36, 44, 52, 62];
const IQ3S_LEVELS = [1, 3, 5, 7, 9, 11, 13, 15];
const IQ1_LEVELS = [-1, 0, 1];

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Base64 to bytes (the core has no atob in every runtime's type library). */
function base64Bytes(text: string): Uint8Array {
  const clean = text.replace(/=+$/, "");
  const out = new Uint8Array((clean.length * 3) >> 2);
  let acc = 0, bits = 0, n = 0;
  for (let i = 0; i < clean.length; i++) {
    acc = (acc << 6) | B64.indexOf(clean[i]);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (acc >> bits) & 0xff;
    }
  }
  return out;
}

function indexList(b64: string): number[] {
  const bin = base64Bytes(b64);
  const out: number[] = [];
  let prev = 0;
  for (let at = 0; at < bin.length;) {
    let d = 0;
    let shift = 0;
    let b: number;
    do {
      b = bin[at++];
      d |= (b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    prev += d;
    out.push(prev);
  }
  return out;
}

function expand(b64: string, bits: number, perPoint: number, levels: readonly number[], out: Uint8Array | Int8Array): Uint8Array | Int8Array {
  const idx = indexList(b64);
  const mask = (1 << bits) - 1;
  for (let k = 0; k < idx.length; k++) {
    for (let i = 0; i < perPoint; i++) out[k * perPoint + i] = levels[(idx[k] >> (bits * i)) & mask];
  }
  return out;
}

export interface IqGrids {
  /** 8 bytes per point: iq2xxs_grid (256), iq2xs_grid (512), iq2s_grid (1024). */
  readonly iq2xxs: Uint8Array;
  readonly iq2xs: Uint8Array;
  readonly iq2s: Uint8Array;
  /** 4 bytes per point: iq3xxs_grid (256), iq3s_grid (512). */
  readonly iq3xxs: Uint8Array;
  readonly iq3s: Uint8Array;
  /** 8 signed bytes per point: iq1s_grid (2048), shared by IQ1_S and IQ1_M. */
  readonly iq1s: Int8Array;
  /**
   * ksigns_iq2xs: a 7-bit sign set becomes 8 sign bits, the eighth making the count of negatives
   * even (the parity bit the encoder leaves out).
   */
  readonly signs: Uint8Array;
}

let grids: IqGrids | undefined;

export function iqGrids(): IqGrids {
  if (grids === undefined) {
    const signs = new Uint8Array(128);
    for (let i = 0; i < 128; i++) {
      let ones = 0;
      for (let b = i; b; b &= b - 1) ones++;
      signs[i] = i | ((ones & 1) << 7);
    }
    grids = {
      iq2xxs: expand(IQ2XXS, 2, 8, IQ2_LEVELS, new Uint8Array(256 * 8)) as Uint8Array,
      iq2xs: expand(IQ2XS, 2, 8, IQ2_LEVELS, new Uint8Array(512 * 8)) as Uint8Array,
      iq2s: expand(IQ2S, 2, 8, IQ2_LEVELS, new Uint8Array(1024 * 8)) as Uint8Array,
      iq3xxs: expand(IQ3XXS, 3, 4, IQ3XXS_LEVELS, new Uint8Array(256 * 4)) as Uint8Array,
      iq3s: expand(IQ3S, 3, 4, IQ3S_LEVELS, new Uint8Array(512 * 4)) as Uint8Array,
      iq1s: expand(IQ1S, 2, 8, IQ1_LEVELS, new Int8Array(2048 * 8)) as Int8Array,
      signs,
    };
  }
  return grids;
}

export interface IqGridIndices {
  /** kgrid_2bit_256, kgrid_2bit_512, kgrid_2bit_1024, kgrid_1bit_2048: 2 bits per element. */
  readonly iq2xxs: readonly number[];
  readonly iq2xs: readonly number[];
  readonly iq2s: readonly number[];
  readonly iq1s: readonly number[];
  /** kgrid_256 and kgrid_512 of the 3-bit grids: 3 bits per element. */
  readonly iq3xxs: readonly number[];
  readonly iq3s: readonly number[];
}

let indices: IqGridIndices | undefined;

/** ggml's kgrid_* index lists themselves, which the IQ encoders' maps and neighbour lists key on. */
export function iqGridIndices(): IqGridIndices {
  indices ??= {
    iq2xxs: indexList(IQ2XXS), iq2xs: indexList(IQ2XS), iq2s: indexList(IQ2S), iq1s: indexList(IQ1S),
    iq3xxs: indexList(IQ3XXS), iq3s: indexList(IQ3S),
  };
  return indices;
}

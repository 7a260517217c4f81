/**
 * float32 <-> float16 on the four 32-bit lanes of a v128, for the GGML quantize kernels that store
 * an fp16 scale (blocks-simd.ts) or read one back (search-simd.ts): the same bits as plain.ts's
 * fp16OfBits and ../scalars.ts's halfValues table.
 *
 * Browser-safe.
 */
import { and, f32x4Add, f32x4Sub, get, i32x4Add, i32x4GtS, i32x4LtS, i32x4MinS, i32x4Shl, i32x4ShrU, or, select, set, type Code } from "../../kernels/wasm/encoder.js";
import type { V128Locals } from "../../kernels/wasm/v128-locals.js";

/** fp16OfBits (plain.ts) of each lane's binary32 bits in local u, in place (the half's bits, zero-extended). */
export function fp16(k: V128Locals, u: number): Code[] {
  const [A, H] = [k.v(), k.v()];
  return [
    set(A, and(get(u), k.c(0x7fffffff))),
    // Normal halves: rebias, round to even on bit 13; past 65520 the sum reaches 0x7c00, the cap.
    set(H, i32x4MinS(i32x4ShrU(i32x4Add(i32x4Add(get(A), k.c(0xfff - 0x38000000)), and(i32x4ShrU(get(A), 13), k.c(1))), 13), k.c(0x7c00))),
    // Below 2^-14: the value plus 0.5 in float32 rounds to even in units of 2^-24, its mantissa the half.
    set(H, select(get(H), i32x4Add(f32x4Add(get(A), k.f(0.5)), k.c(-0x3f000000)), i32x4GtS(get(A), k.c(0x387fffff)))),
    set(H, select(k.c(0x7e00), get(H), i32x4GtS(get(A), k.c(0x7f800000)))),
    set(u, or(get(H), and(i32x4ShrU(get(u), 16), k.c(0x8000)))),
  ];
}

/** The float32 bits of each lane's half (zero-extended bits in local h), in place: halfValues[h]. */
export function f32OfHalf(k: V128Locals, h: number): Code[] {
  const [A, N] = [k.v(), k.v()];
  return [
    set(A, and(get(h), k.c(0x7fff))),
    // The exponent rebiased: right for normal halves.
    set(N, i32x4Add(i32x4Shl(get(A), 13), k.c(0x38000000))),
    // Subnormals m * 2^-24 as (2^-14 * (1 + m / 1024)) - 2^-14: exact.
    set(N, select(f32x4Sub(i32x4Add(get(N), k.c(0x00800000)), k.c(0x38800000)), get(N), i32x4LtS(get(A), k.c(0x400)))),
    set(N, select(k.c(0x7f800000), get(N), i32x4GtS(get(A), k.c(0x7bff)))),
    // Every NaN as halfValues holds it: 0x7fc00000, whatever its sign and payload.
    set(h, select(k.c(0x7fc00000), or(get(N), i32x4Shl(and(get(h), k.c(0x8000)), 16)), i32x4GtS(get(A), k.c(0x7c00)))),
  ];
}

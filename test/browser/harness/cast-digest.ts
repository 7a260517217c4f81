/**
 * A fingerprint of the cast kernel's output, computed the same way in Node and in each browser so
 * the two can be compared bit for bit: every code of every type of 16 bits or fewer cast to float64,
 * and every float16 and bfloat16 code cast to every 8-, 6-, 4- and 2-bit type under every
 * saturate / round_mode setting (what test/ops/cast-exhaustive.test.ts checks against its oracle).
 * One FNV-1a hash of the output bytes per conversion, so a difference names the conversion.
 */
import { DTYPES, Tensor, cast, type DType, type DTypeName } from "../../../src/index.js";
import { everyCodeTensor } from "../../support/cast-inputs.js";

const NARROW: DTypeName[] = [
  "int8", "uint8", "bool", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float8e8m0",
  "float6e2m3", "float6e3m2", "int4", "uint4", "float4e2m1", "int2", "uint2",
];

function fnv1a(bytes: Uint8Array): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193) >>> 0;
  return h.toString(16).padStart(8, "0");
}

export interface CastDigest {
  /** Conversion ("float16 -> float8e8m0 saturate=false round_mode=down") -> hash of its output bytes. */
  readonly hashes: Readonly<Record<string, string>>;
  readonly conversions: number;
  readonly elements: number;
}

export function castDigest(): CastDigest {
  const hashes: Record<string, string> = {};
  let elements = 0;
  const small = DTYPES.filter((t) => t.bits > 0 && t.bits <= 16 && t.kind !== "string" && t.kind !== "complex");
  for (const t of small) {
    const out = cast(everyCodeTensor(t), "float64");
    hashes[`${t.name} -> float64`] = fnv1a(out.bytes());
    elements += out.size;
  }
  for (const fromName of ["float16", "bfloat16"] as const) {
    const src = everyCodeTensor(DTYPES.find((t) => t.name === fromName)!);
    for (const to of NARROW) {
      for (const saturate of [true, false]) {
        for (const roundMode of to === "float8e8m0" ? (["up", "down", "nearest"] as const) : (["up"] as const)) {
          const out = cast(src, to, to === "float8e8m0" ? { saturate, roundMode } : { saturate });
          hashes[`${fromName} -> ${to} saturate=${saturate}${to === "float8e8m0" ? ` round_mode=${roundMode}` : ""}`] = fnv1a(out.bytes());
          elements += out.size;
        }
      }
    }
  }
  return { hashes, conversions: Object.keys(hashes).length, elements };
}

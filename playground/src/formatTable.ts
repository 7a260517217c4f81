/**
 * Every float format side by side: its fields and bias, its limits and epsilon, how it spells inf,
 * NaN and -0, and ONNX Cast's saturate table for it (what a value past max, an inf and a NaN
 * become, with saturate on and off). Every cell is computed by the library.
 */
import { bitFields, cast, DTYPES, formatHex, readElement, elementCode, Tensor, type DType } from "tensorcast";
import { el } from "./dom.js";
import { formatLimit } from "./plot.js";

/** The float types, widest first. */
export const FLOAT_TYPES: readonly DType[] = [...DTYPES.filter((t) => t.kind === "float")].sort((a, b) => b.bits - a.bits || a.onnx - b.onnx);

/** Consecutive codes as ranges: `0x7c01–0x7fff`. */
function ranges(t: DType, codes: bigint[]): string {
  if (codes.length === 0) return "none";
  const out: string[] = [];
  let start = codes[0];
  let prev = codes[0];
  for (const c of [...codes.slice(1), -1n]) {
    if (c === prev + 1n) {
      prev = c;
      continue;
    }
    out.push(start === prev ? formatHex(start, t) : `${formatHex(start, t)}–${formatHex(prev, t)}`);
    start = prev = c;
  }
  return out.join(", ");
}

/** Codes of inf, NaN and -0: by scanning every code up to 16 bits, by the IEEE rule for float32/64. */
function specials(t: DType): { inf: string; nan: string; negZero: string } {
  if (t.bits > 16) {
    const f = bitFields(t)!;
    const sign = 1n << BigInt(t.bits - 1);
    const exp = ((1n << BigInt(f.exponent)) - 1n) << BigInt(f.mantissa);
    const man = (1n << BigInt(f.mantissa)) - 1n;
    return {
      inf: `${formatHex(exp, t)}, ${formatHex(sign | exp, t)}`,
      nan: `${formatHex(exp + 1n, t)}–${formatHex(exp | man, t)}, ${formatHex(sign | exp | 1n, t)}–${formatHex(sign | exp | man, t)}`,
      negZero: formatHex(sign, t),
    };
  }
  const n = 2 ** t.bits;
  const inf: bigint[] = [];
  const nan: bigint[] = [];
  let negZero = "none";
  for (let c = 0; c < n; c++) {
    const bytes = new Uint8Array(Math.ceil(t.bits / 8));
    for (let k = 0; k < bytes.length; k++) bytes[k] = (c >> (8 * k)) & 0xff;
    const v = Tensor.fromBytes(bytes, t, [1]).toValues()[0] as number;
    if (v !== v) nan.push(BigInt(c));
    else if (!Number.isFinite(v)) inf.push(BigInt(c));
    else if (Object.is(v, -0)) negZero = formatHex(BigInt(c), t);
  }
  return { inf: ranges(t, inf), nan: ranges(t, nan), negZero };
}

/** What casting float64 `x` to `t` gives (value and code), or the library's refusal in short. */
function castCell(x: number, t: DType, saturate: boolean): string {
  if (t.name === "float64") return "-";
  try {
    const r = cast(Tensor.fromValues([x], "float64"), t.name, { saturate });
    return `${readElement(r, 0).display} (${formatHex(elementCode(r, 0), t)})`;
  } catch (e) {
    return e instanceof Error ? `refused: ${e.message}` : String(e);
  }
}

const HEAD = [
  "format", "s|e|m", "bias", "max", "min normal", "min subnormal", "epsilon", "inf", "NaN", "-0",
  "1e300, saturate=1", "1e300, saturate=0", "inf, saturate=1", "inf, saturate=0", "nan",
];

/** The table; negative values mirror the positive columns. */
export function formatTable(): HTMLElement {
  const table = el("table", { class: "formats", id: "format-table" });
  table.append(el("caption", { class: "note" }, "Every float format. Casts are from float64 at the newest opset; negative inputs give the mirrored results."));
  table.append(el("tr", {}, ...HEAD.map((h) => el("th", { scope: "col" }, h))));
  for (const t of FLOAT_TYPES) {
    const f = bitFields(t)!;
    const bias = t.format ? t.format.bias : 1023;
    const sp = specials(t);
    const cells = [
      `${f.sign}|${f.exponent}|${f.mantissa}`, String(bias), formatLimit(Number(t.max)), formatLimit(t.minNormal!),
      t.minSubnormal === undefined || t.minSubnormal === t.minNormal ? "none" : formatLimit(t.minSubnormal),
      f.mantissa === 0 ? "1" : `2^-${f.mantissa}`, sp.inf, sp.nan, sp.negZero,
      castCell(1e300, t, true), castCell(1e300, t, false), castCell(Infinity, t, true), castCell(Infinity, t, false), castCell(NaN, t, true),
    ];
    table.append(el("tr", { "data-format": t.name }, el("th", { scope: "row" }, t.name),
      ...cells.map((c, i) => el("td", { "data-col": HEAD[i + 1] }, c))));
  }
  return table;
}

/**
 * JSON text with key order kept as built (a Map), because tokenizer.json's vocabulary is ordered by
 * id and a plain object would put keys like "1" or "42" first. Laid out as both tokenizers
 * (serde_json's pretty printer) and Python's `json.dumps(indent=2)` do: two spaces, `": "`, `[]`
 * and `{}` when empty.
 */

/** A JSON value; `rawNumber` is written as given (an integer too large for a double). */
export type OrderedJson =
  | null
  | boolean
  | number
  | string
  | readonly OrderedJson[]
  | ReadonlyMap<string, OrderedJson>
  | { readonly rawNumber: string };

export function toJsonText(v: OrderedJson, trailingNewline = false): string {
  const parts: string[] = [];
  write(v, "", parts);
  if (trailingNewline) parts.push("\n");
  return parts.join("");
}

function write(v: OrderedJson, indent: string, out: string[]): void {
  if (v === null || typeof v === "boolean" || typeof v === "string") {
    out.push(JSON.stringify(v));
    return;
  }
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new RangeError(`JSON has no ${v}`);
    out.push(JSON.stringify(v));
    return;
  }
  const inner = indent + "  ";
  if (Array.isArray(v)) {
    const a = v as readonly OrderedJson[];
    if (a.length === 0) {
      out.push("[]");
      return;
    }
    out.push("[\n");
    for (let i = 0; i < a.length; i++) {
      out.push(inner);
      write(a[i]!, inner, out);
      out.push(i + 1 < a.length ? ",\n" : "\n");
    }
    out.push(indent, "]");
    return;
  }
  if (v instanceof Map) {
    const m = v as ReadonlyMap<string, OrderedJson>;
    if (m.size === 0) {
      out.push("{}");
      return;
    }
    out.push("{\n");
    let i = 0;
    for (const [k, x] of m) {
      out.push(inner, JSON.stringify(k), ": ");
      write(x, inner, out);
      out.push(++i < m.size ? ",\n" : "\n");
    }
    out.push(indent, "}");
    return;
  }
  out.push((v as { rawNumber: string }).rawNumber);
}

/**
 * `x` as Python's repr (and so json.dumps) writes a float: the shortest digits that read back, in
 * fixed notation with ".0" when integral, or with an exponent of at least two digits ("1e-05",
 * "1e+16") when the decimal point is 4 or more places left of the first digit or 17 or more right.
 */
export function pythonFloatText(x: number): string {
  if (!Number.isFinite(x)) throw new RangeError(`JSON has no ${x}`);
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  const [mantissa, exponent] = Math.abs(x).toExponential().split("e");
  const digits = mantissa!.replace(".", "");
  const decpt = Number(exponent) + 1;
  if (decpt <= -4 || decpt > 16) {
    const e = decpt - 1;
    const rest = digits.length > 1 ? `.${digits.slice(1)}` : "";
    return `${sign}${digits[0]}${rest}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  }
  if (decpt <= 0) return `${sign}0.${"0".repeat(-decpt)}${digits}`;
  if (decpt >= digits.length) return `${sign}${digits}${"0".repeat(decpt - digits.length)}.0`;
  return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
}

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

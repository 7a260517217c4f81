/**
 * An independent safetensors reader, the fuzz suite's peer for that format. It is written from the
 * format's published rules (huggingface/safetensors README "Format" and "Notes", and the checks of
 * its reference reader as documented), not from src/, and shares no code with it:
 *
 * - 8 bytes: N, a little-endian u64; N at most 100,000,000 (the reference reader's header limit);
 *   the file holds at least 8 + N bytes.
 * - N bytes: UTF-8 JSON text, an object that starts with "{" (whitespace padding allowed around it,
 *   as the reference reader takes it).
 *   JSON as serde_json reads it: RFC 8259, no lone surrogates in \u escapes, nesting at most 128.
 *   Duplicate keys: the README disallows them; the reference reader keeps the last tensor entry
 *   or metadata key and refuses a repeated __metadata__ or tensor field, and so does this peer.
 * - Each key but "__metadata__" maps to {"dtype", "shape", "data_offsets"}: dtype one of the
 *   format's codes; shape a list of unsigned integers; data_offsets two unsigned integers
 *   [BEGIN, END) relative to the byte buffer. Integers are written as integers (serde refuses 2.0
 *   or 1e1 for an unsigned field) and fit a u64. Other fields are ignored (serde's default).
 * - "__metadata__" is a string-to-string map.
 * - The rest of the file is the byte buffer: the tensors, sorted by offsets, tile it exactly (each
 *   begins where the previous ends, the first at 0, the last ends at its end), and each holds
 *   exactly product(shape) * bits / 8 bytes, which must be whole bytes.
 */

/** dtype code -> bits per element, as the format defines them. */
export const SAFETENSORS_BITS: Readonly<Record<string, number>> = {
  BOOL: 8, F4: 4, F6_E2M3: 6, F6_E3M2: 6, U8: 8, I8: 8, F8_E5M2: 8, F8_E4M3: 8, F8_E8M0: 8, F8_E4M3FNUZ: 8, F8_E5M2FNUZ: 8,
  I16: 16, U16: 16, F16: 16, BF16: 16, I32: 32, U32: 32, F32: 32, C64: 64, F64: 64, I64: 64, U64: 64,
};

export interface PeerTensor {
  readonly name: string;
  readonly code: string;
  readonly shape: bigint[];
  readonly bytes: Uint8Array;
}

export type PeerResult = { ok: true; tensors: PeerTensor[]; metadata?: Record<string, string> } | { ok: false; why: string };

type Json = { t: "obj"; entries: [string, Json][]; dup?: boolean } | { t: "arr"; items: Json[] } | { t: "str"; v: string }
  | { t: "num"; text: string; integer: boolean } | { t: "lit"; v: boolean | null };

class JsonError extends Error {}

const MAX_DEPTH = 128;
const U64_MAX = 2n ** 64n - 1n;

/** A strict JSON parser that keeps each number's text, and refuses duplicate keys and lone surrogates. */
function parseJson(text: string): Json {
  let i = 0;
  const fail = (why: string): never => {
    throw new JsonError(`${why} at ${i}`);
  };
  const ws = (): void => {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
  };
  const string = (): string => {
    i++;
    let out = "";
    for (;;) {
      if (i >= text.length) fail("unterminated string");
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return out;
      }
      if (c < 0x20) fail("control character in string");
      if (c === 0x5c) {
        const e = text[i + 1];
        i += 2;
        const simple: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
        if (e in simple) out += simple[e];
        else if (e === "u") {
          const hex = (): number => {
            const h = text.slice(i, i + 4);
            if (!/^[0-9a-fA-F]{4}$/.test(h)) fail("bad \\u escape");
            i += 4;
            return parseInt(h, 16);
          };
          const u = hex();
          if (u >= 0xdc00 && u <= 0xdfff) fail("lone trailing surrogate");
          if (u >= 0xd800 && u <= 0xdbff) {
            if (text[i] !== "\\" || text[i + 1] !== "u") fail("lone leading surrogate");
            i += 2;
            const low = hex();
            if (low < 0xdc00 || low > 0xdfff) fail("lone leading surrogate");
            out += String.fromCharCode(u, low);
          } else out += String.fromCharCode(u);
        } else fail("bad escape");
        continue;
      }
      // The text came from a strict UTF-8 decoder, so its surrogates are paired.
      out += text[i++];
    }
  };
  const value = (depth: number): Json => {
    if (depth > MAX_DEPTH) fail("recursion limit exceeded");
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const entries: [string, Json][] = [];
      const seen = new Set<string>();
      let dup = false;
      ws();
      if (text[i] === "}") {
        i++;
        return { t: "obj", entries, dup };
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a key");
        const k = string();
        if (seen.has(k)) dup = true;
        seen.add(k);
        ws();
        if (text[i++] !== ":") fail("expected :");
        entries.push([k, value(depth + 1)]);
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "}") {
          i++;
          return { t: "obj", entries, dup };
        } else fail("expected , or }");
      }
    }
    if (c === "[") {
      i++;
      const items: Json[] = [];
      ws();
      if (text[i] === "]") {
        i++;
        return { t: "arr", items };
      }
      for (;;) {
        items.push(value(depth + 1));
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "]") {
          i++;
          return { t: "arr", items };
        } else fail("expected , or ]");
      }
    }
    if (c === '"') return { t: "str", v: string() };
    const m = /^-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (m && m[0].length > 0 && m[0] !== "-") {
      i += m[0].length;
      return { t: "num", text: m[0], integer: m[1] === undefined && m[2] === undefined };
    }
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return { t: "lit", v };
      }
    }
    return fail("unexpected character");
  };
  const v = value(1);
  ws();
  if (i !== text.length) fail("trailing characters");
  return v;
}

function u64(j: Json | undefined, what: string): bigint {
  if (!j || j.t !== "num" || !j.integer || j.text.startsWith("-")) throw new JsonError(`${what} is not an unsigned integer`);
  const v = BigInt(j.text);
  if (v > U64_MAX) throw new JsonError(`${what} does not fit a u64`);
  return v;
}

/** Reads a whole safetensors file by the published rules. */
export function readSafetensors(file: Uint8Array): PeerResult {
  try {
    if (file.length < 8) return { ok: false, why: "shorter than 8 bytes" };
    const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
    const n = view.getBigUint64(0, true);
    if (n > 100_000_000n) return { ok: false, why: "header over 100 MB" };
    if (8n + n > BigInt(file.length)) return { ok: false, why: "header past the end of the file" };
    const headerBytes = file.subarray(8, 8 + Number(n));
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(headerBytes);
    } catch {
      return { ok: false, why: "header is not UTF-8" };
    }
    // The reference reader (serde_json) skips leading JSON whitespace, and its own test
    // test_whitespace_leading_padded_header says so on purpose: what it reads, this peer reads.
    if (!/^[ \t\r\n]*\{/.test(text)) return { ok: false, why: "header does not start with {" };
    const json = parseJson(text);
    if (json.t !== "obj") return { ok: false, why: "header is not an object" };
    const buffer = file.subarray(8 + Number(n));
    let metadata: Record<string, string> | undefined;
    const infos: { name: string; code: string; shape: bigint[]; begin: bigint; end: bigint }[] = [];
    // The README disallows duplicate keys, but the reference reader's HashMap keeps the last entry
    // of a repeated tensor name or metadata key (checked against the crate built here); a repeated
    // __metadata__ or a repeated field inside a tensor it refuses. The peer reads as it does:
    // every entry must still be valid, and the last one counts.
    if (json.entries.filter(([k]) => k === "__metadata__").length > 1) return { ok: false, why: "__metadata__ appears twice" };
    const last = new Map<string, number>();
    json.entries.forEach(([k], i) => last.set(k, i));
    for (const [index, [name, v]] of json.entries.entries()) {
      if (name !== "__metadata__" && v.t === "obj" && v.dup) return { ok: false, why: `${JSON.stringify(name)}: a field appears twice` };
      if (name === "__metadata__") {
        if (v.t === "lit" && v.v === null) continue;
        if (v.t !== "obj") return { ok: false, why: "__metadata__ is not a map" };
        metadata = {};
        for (const [k, s] of v.entries) {
          if (s.t !== "str") return { ok: false, why: `__metadata__ ${JSON.stringify(k)} is not a string` };
          metadata[k] = s.v;
        }
        continue;
      }
      if (v.t !== "obj") return { ok: false, why: `${JSON.stringify(name)} is not an object` };
      const field = (k: string): Json | undefined => v.entries.find(([key]) => key === k)?.[1];
      const dtype = field("dtype");
      if (!dtype || dtype.t !== "str" || !(dtype.v in SAFETENSORS_BITS)) return { ok: false, why: `${JSON.stringify(name)}: bad dtype` };
      const shape = field("shape");
      if (!shape || shape.t !== "arr") return { ok: false, why: `${JSON.stringify(name)}: shape is not a list` };
      const offsets = field("data_offsets");
      if (!offsets || offsets.t !== "arr" || offsets.items.length !== 2) return { ok: false, why: `${JSON.stringify(name)}: data_offsets is not a pair` };
      if (last.get(name) !== index) continue;
      infos.push({
        name, code: dtype.v, shape: shape.items.map((d) => u64(d, `${JSON.stringify(name)}: a dimension`)),
        begin: u64(offsets.items[0], `${JSON.stringify(name)}: begin`), end: u64(offsets.items[1], `${JSON.stringify(name)}: end`),
      });
    }
    const sorted = [...infos].sort((a, b) => (a.begin < b.begin ? -1 : a.begin > b.begin ? 1 : a.end < b.end ? -1 : a.end > b.end ? 1 : 0));
    let at = 0n;
    for (const t of sorted) {
      if (t.begin !== at) return { ok: false, why: `${JSON.stringify(t.name)}: begins at ${t.begin}, not at ${at}` };
      if (t.end < t.begin) return { ok: false, why: `${JSON.stringify(t.name)}: ends before it begins` };
      const elements = t.shape.reduce((a, b) => a * b, 1n);
      const bits = elements * BigInt(SAFETENSORS_BITS[t.code]);
      if (elements > U64_MAX || bits > U64_MAX) return { ok: false, why: `${JSON.stringify(t.name)}: size overflows` };
      if (bits % 8n !== 0n) return { ok: false, why: `${JSON.stringify(t.name)}: not whole bytes` };
      if (bits / 8n !== t.end - t.begin) return { ok: false, why: `${JSON.stringify(t.name)}: ${t.end - t.begin} bytes for ${bits / 8n}` };
      at = t.end;
    }
    if (at !== BigInt(buffer.length)) return { ok: false, why: `tensors cover ${at} of ${buffer.length} bytes` };
    return {
      ok: true, metadata,
      tensors: infos.map((t) => ({ name: t.name, code: t.code, shape: t.shape, bytes: buffer.subarray(Number(t.begin), Number(t.end)) })),
    };
  } catch (e) {
    if (e instanceof JsonError) return { ok: false, why: e.message };
    if (e instanceof RangeError) return { ok: false, why: `peer: ${e.message}` };
    throw e;
  }
}

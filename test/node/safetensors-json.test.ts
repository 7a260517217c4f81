/**
 * The safetensors header is accepted exactly when the Rust reader accepts it: tensorcast's reader
 * (src/io/safetensors/json.ts, iterative, one pass) against
 *   - the Rust crate's own verdicts, recorded on 364 headers (test/fixtures/safetensors-headers.json:
 *     the issue's cases, serde_json's number, string, nesting and duplicate rules, and mutations),
 *   - an independent model written from the published rules (./safetensorsModel.ts: a recursive
 *     JSON parser into serde's value tree, then serde's typed reading), on those headers and on
 *     headers fast-check generates and mutates.
 * Where they agree a header is valid, the tensors and metadata must agree too. The one deliberate
 * difference: a dimension above 2^53 - 1 (only possible in an empty tensor) is refused.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { TensorcastError } from "../../src/index.js";
import { parseSafetensorsHeader, safetensorsCode } from "../../src/node/io/safetensors.js";
import { ROOT } from "./helpers.js";
import { modelVerdict, type Verdict } from "./safetensorsModel.js";
import { property, runs } from "../support/suite.js";

interface Case {
  why: string;
  header: string;
  data: number;
  rust: "accepts" | "refuses";
  tensors?: [string, string, number[], [number, number]][];
  metadata?: Record<string, string>;
}

const CASES = (JSON.parse(readFileSync(join(ROOT, "test", "fixtures", "safetensors-headers.json"), "utf8")) as { cases: Case[] }).cases;

type Ours = { ok: true; metadata?: Record<string, string>; tensors: [string, string, number[], [number, number]][] } | { ok: false; code: string; message: string };

function ours(header: Uint8Array, dataLength: number): Ours {
  try {
    const h = parseSafetensorsHeader(header, 8 + header.length + dataLength, "h");
    const tensors = h.tensors
      .map((t): [string, string, number[], [number, number]] => [t.name, safetensorsCode(t.dtype)!, [...t.shape], [t.begin, t.end]])
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return { ok: true, metadata: h.metadata, tensors };
  } catch (e) {
    if (!(e instanceof TensorcastError)) throw e;
    return { ok: false, code: e.code, message: e.message };
  }
}

function modelTensors(v: Verdict & { ok: true }): [string, string, number[], [number, number]][] {
  return v.tensors
    .map((t): [string, string, number[], [number, number]] => [t.name, t.dtype, t.shape.map(Number), [Number(t.begin), Number(t.end)]])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** The documented difference: the model (and Rust) accept a dimension above 2^53 - 1 in an empty tensor. */
function beyond2to53(v: Verdict): boolean {
  return v.ok && v.tensors.some((t) => t.shape.some((d) => d > BigInt(Number.MAX_SAFE_INTEGER)));
}

test("the recorded corpus covers both verdicts and the issue's cases", () => {
  assert.equal(CASES.length, 364);
  assert.equal(CASES.filter((c) => c.rust === "accepts").length, 156);
  const why = new Map(CASES.map((c) => [c.why, c.rust]));
  for (const refused of ["float in shape", "float in offsets: 2.0 (the issue's example)", "lone leading surrogate in a name", "a UTF-8 byte-order mark before {", "duplicate dtype field", "duplicate __metadata__", "a shape nested 10,000 deep"]) {
    assert.equal(why.get(refused), "refuses", refused);
  }
  for (const accepted of ["duplicate tensor name, same entry: the last wins", "an unknown field is ignored", "a tensor written as a list", "leading whitespace"]) {
    assert.equal(why.get(accepted), "accepts", accepted);
  }
});

test("tensorcast's reader and the model agree with the Rust crate on every recorded header", () => {
  for (const c of CASES) {
    const header = new TextEncoder().encode(c.header);
    const mine = ours(header, c.data);
    const model = modelVerdict(header, c.data);
    const label = `${c.why}: ${JSON.stringify(c.header.slice(0, 120))}`;
    assert.equal(model.ok, c.rust === "accepts", `model: ${label}`);
    if (beyond2to53(model)) {
      assert.ok(!mine.ok && mine.code === "INVALID_SHAPE" && /above 2\^53 - 1, which tensorcast cannot represent/.test(mine.message), label);
      continue;
    }
    assert.equal(mine.ok, c.rust === "accepts", `${label}: ${mine.ok ? "accepted" : mine.message}`);
    if (mine.ok && model.ok) {
      assert.deepEqual(mine.tensors, c.tensors, label);
      assert.deepEqual(modelTensors(model), c.tensors, label);
      assert.deepEqual(mine.metadata, c.metadata ?? model.metadata, label);
    }
  }
});

/** Headers built from parts, valid and nearly valid, then mutated. */
const part = fc.oneof(
  fc.constantFrom("{", "}", "[", "]", '"', ",", ":", " ", "\n", "0", "1", "-", ".", "e", "E", "+", "\\", "null", "true", '"F32"', '"U8"', '"F4"', "\\u00e9", "\\ud800", "\\udc00", "\\ud83d\\ude00", "1e400", "1e308", "2.0", "-0", "18446744073709551615", "9007199254740993", "\u0001", "\u007f", "é", "\ufeff"),
  fc.integer({ min: 0, max: 20 }).map(String),
);
/** `arb` one time in ten, else undefined. */
function rarely<T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.oneof({ arbitrary: fc.constant(undefined), weight: 9 }, { arbitrary: arb, weight: 1 });
}

const BITS: Record<string, number> = { F32: 32, U8: 8, F16: 16, F4: 4, F6_E3M2: 6, BOOL: 8, C64: 64 };
const tensorParts = fc.record({
  dtype: fc.oneof({ arbitrary: fc.constantFrom("F32", "U8", "F16", "BOOL", "C64"), weight: 6 }, { arbitrary: fc.constantFrom("F4", "F6_E3M2"), weight: 1 }),
  dtypeSpelling: fc.oneof({ arbitrary: fc.constant("plain"), weight: 12 }, { arbitrary: fc.constantFrom("object", "lower"), weight: 1 }),
  shape: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 3 }),
  oddDim: rarely(fc.constantFrom("1.0", "1e0", "-1", "4294967296", "[]", "-0")),
  lengthError: rarely(fc.constantFrom(-1, 1)),
  extra: rarely(fc.constantFrom('"x":[1,{"y":null}]', '"dtype":"U8"', '"x":"\\ud800"', '"x":1e999', '"x":[[[[]]]]', '"x":1.7976931348623157e308', '"x":"\\ud83d\\ude00"')),
  list: fc.boolean(),
});

/** Tensor entries laid back to back (their offsets tile the data unless told to lie); returns their text and the data length. */
function entries(parts: readonly (typeof tensorParts extends fc.Arbitrary<infer T> ? T : never)[]): { texts: string[]; data: number } {
  let at = 0;
  const texts = parts.map((t) => {
    const size = t.shape.reduce((a, b) => a * b, 1);
    const length = Math.ceil((size * BITS[t.dtype]) / 8) + (t.lengthError ?? 0);
    const dims = t.oddDim === undefined ? t.shape.map(String) : [...t.shape.map(String), t.oddDim];
    const dtype = t.dtypeSpelling === "object" ? `{"${t.dtype}":null}` : `"${t.dtypeSpelling === "lower" ? t.dtype.toLowerCase() : t.dtype}"`;
    const offsets = `[${at},${Math.max(at, at + length)}]`;
    at = Math.max(at, at + length);
    if (t.list) return `[${dtype},[${dims.join(",")}],${offsets}]`;
    return `{"dtype":${dtype},"shape":[${dims.join(",")}],"data_offsets":${offsets}${t.extra ? `,${t.extra}` : ""}}`;
  });
  return { texts, data: at };
}

const headerText = fc.record({
  names: fc.tuple(fc.shuffledSubarray(["a", "b", "c", "d", ""]), rarely(fc.constantFrom("\\u0061", "__metadata__", "b"))).map(([n, odd]) => (odd === undefined ? n : [...n, odd].slice(0, 4))),
  tensors: fc.array(tensorParts, { minLength: 5, maxLength: 5 }),
  metadata: fc.option(fc.oneof(fc.constantFrom('{"k":"v"}', "null", '{"k":"v","k":"w"}', '{"__proto__":"x"}'), rarely(fc.constantFrom('{"k":1}', "[]")).map((m) => m ?? "{}")), { nil: undefined }),
  lead: fc.oneof(fc.constantFrom("", " ", "\t\n\r"), rarely(fc.constantFrom("\ufeff", "\u000b")).map((x) => x ?? "")),
  trail: fc.oneof(fc.constantFrom("", "  ", "\r\n"), rarely(fc.constantFrom("\u0000", "x")).map((x) => x ?? "")),
  mutations: fc.array(fc.record({ at: fc.nat(), remove: fc.integer({ min: 0, max: 2 }), insert: fc.option(part, { nil: undefined }) }), { maxLength: 2 }),
  mutate: fc.integer({ min: 0, max: 3 }),
  dataError: rarely(fc.constantFrom(1, -1)).map((e) => e ?? 0),
}).map((h) => {
  const named = h.names.filter((n) => n !== "__metadata__");
  const { texts, data } = entries(h.tensors.slice(0, named.length));
  let next = 0;
  const members = h.names.map((n) => `"${n}":${n === "__metadata__" ? (h.metadata ?? "{}") : texts[next++]}`);
  if (h.metadata !== undefined) members.unshift(`"__metadata__":${h.metadata}`);
  let text = `${h.lead}{${members.join(",")}}${h.trail}`;
  for (const m of h.mutate === 0 ? h.mutations : []) {
    const at = m.at % (text.length + 1);
    text = text.slice(0, at) + (m.insert ?? "") + text.slice(at + m.remove);
  }
  return { text, data: Math.max(0, data + h.dataError) };
});

test("tensorcast's reader agrees with the model on generated and mutated headers", () => {
  let accepted = 0;
  fc.assert(
    fc.property(headerText, ({ text, data }) => {
      const header = new TextEncoder().encode(text);
      const model = modelVerdict(header, data);
      const mine = ours(header, data);
      if (beyond2to53(model)) return;
      assert.equal(mine.ok, model.ok, `${JSON.stringify(text)} + ${data} bytes: ours ${mine.ok ? "accepts" : `refuses (${mine.message})`}, model ${model.ok ? "accepts" : `refuses (${model.why})`}`);
      if (mine.ok && model.ok) {
        accepted++;
        assert.deepEqual(mine.tensors, modelTensors(model));
        assert.deepEqual(mine.metadata, model.metadata);
      }
    }),
    property(4000, 13),
  );
  assert.ok(accepted > runs(4000) / 10, `only ${accepted} generated headers were valid`);
});

test("invalid UTF-8 anywhere is refused, as Rust's str::from_utf8 refuses it", () => {
  const valid = '{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}';
  const cases: [string, number[]][] = [
    ["a stray continuation byte", [0x80]], ["an overlong /", [0xc0, 0xaf]], ["an overlong 3-byte form", [0xe0, 0x80, 0xaf]],
    ["an encoded surrogate", [0xed, 0xa0, 0x80]], ["beyond U+10FFFF", [0xf4, 0x90, 0x80, 0x80]], ["a truncated sequence", [0xe2, 0x82]],
    ["0xFF", [0xff]],
  ];
  for (const [what, bytes] of cases) {
    for (const at of [2, valid.length]) {
      const header = Buffer.concat([Buffer.from(valid.slice(0, at)), Buffer.from(bytes), Buffer.from(valid.slice(at))]);
      const mine = ours(new Uint8Array(header), 0);
      assert.ok(!mine.ok && mine.code === "INVALID_DATA", `${what} at ${at}`);
      assert.equal(modelVerdict(new Uint8Array(header), 0).ok, false, `model: ${what} at ${at}`);
    }
  }
  // Well-formed sequences of every length inside a name are kept.
  const name = "é€😀\u0800\uffff";
  const ok = ours(new TextEncoder().encode(`{"${name}":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}`), 0);
  assert.ok(ok.ok);
  assert.equal(ok.tensors[0][0], name);
});

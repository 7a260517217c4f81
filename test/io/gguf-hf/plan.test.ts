/**
 * The GGUF -> Hugging Face plan's rules on their own: unsupported architectures and tokenizers,
 * malformed metadata, the rotary unpermutation as the exact inverse of llama.cpp's permute, the
 * norm offset's float32 arithmetic, and the reader-facing input forms (bigint counts, typed arrays).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { applyTransform, ggufToHf, GGUF_HF_ARCHITECTURES, type GgufValue } from "../../../src/io/gguf-hf/index.js";
import { mergesFromScores } from "../../../src/io/gguf-hf/merges.js";
import { pythonFloatText } from "../../../src/io/gguf-hf/json.js";
import { throwsCode } from "../../support/assertions.js";
import { property } from "../../support/suite.js";

const DIR = fileURLToPath(new URL("../../../../test/fixtures/gguf-hf/", import.meta.url));

function fixture(c: string): { meta: Map<string, GgufValue>; table: Array<{ name: string; shape: number[] }> } {
  const raw = JSON.parse(readFileSync(`${DIR}${c}/meta.json`, "utf8")) as {
    metadata: Record<string, { type: string; value: GgufValue }>;
    tensors: Array<{ name: string; shape: number[] }>;
  };
  return { meta: new Map(Object.entries(raw.metadata).map(([k, v]) => [k, v.value])), table: raw.tensors };
}

/** llama.cpp's forward permute of Q/K rows: (heads, 2, half, ...) -> (heads, half, 2, ...). */
function permute(values: Float32Array, rows: number, heads: number): Float32Array {
  const rowLen = values.length / rows;
  const half = rows / heads / 2;
  const out = new Float32Array(values.length);
  for (let h = 0; h < heads; h++)
    for (let j = 0; j < 2; j++)
      for (let i = 0; i < half; i++) {
        const src = (h * 2 * half + j * half + i) * rowLen;
        out.set(values.subarray(src, src + rowLen), (h * 2 * half + i * 2 + j) * rowLen);
      }
  return out;
}

test("an unsupported architecture is UNSUPPORTED_TYPE naming it and the supported ones", () => {
  const { meta, table } = fixture("llama");
  meta.set("general.architecture", "mamba");
  throwsCode(() => ggufToHf(meta, table), "UNSUPPORTED_TYPE", /"mamba".*llama, qwen2, qwen3, gemma2, gemma3, phi3/);
  meta.delete("general.architecture");
  throwsCode(() => ggufToHf(meta, table), "INVALID_DATA", /general\.architecture/);
  assert.deepEqual([...GGUF_HF_ARCHITECTURES], ["llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"]);
});

test("a tokenizer model other than gpt2 or llama is UNSUPPORTED_TYPE", () => {
  const { meta, table } = fixture("qwen2");
  meta.set("tokenizer.ggml.model", "t5");
  throwsCode(() => ggufToHf(meta, table), "UNSUPPORTED_TYPE", /"t5".*gpt2.*llama/);
});

test("malformed metadata is INVALID_DATA with its reason", () => {
  const cases: Array<[string, (m: Map<string, GgufValue>) => void, RegExp]> = [
    ["bos id past the vocabulary", (m) => m.set("tokenizer.ggml.bos_token_id", 100000), /bos_token_id is 100000, past/],
    ["token types of another length", (m) => m.set("tokenizer.ggml.token_type", [1, 1]), /token_type has 2 entries/],
    ["a merge of three parts", (m) => m.set("tokenizer.ggml.merges", ["a b c"]), /"a b c"/],
    ["tokens not strings", (m) => m.set("tokenizer.ggml.tokens", [1, 2]), /array of strings/],
    ["a count that is a string", (m) => m.set("llama.block_count", "2"), /llama\.block_count.*a number/],
    ["a negative count", (m) => m.set("llama.block_count", -1), /non-negative integer/],
    ["a count past 2^53", (m) => m.set("llama.block_count", 1n << 60n), /beyond 2\^53/],
    ["heads that do not divide Q", (m) => m.set("llama.attention.head_count", 3), /does not split into 3 heads/],
  ];
  for (const [what, change, pattern] of cases) {
    const { meta, table } = fixture("llama");
    change(meta);
    throwsCode(() => ggufToHf(meta, table), "INVALID_DATA", pattern);
    void what;
  }
  const { meta, table } = fixture("llama");
  throwsCode(() => ggufToHf(meta, [...table, table[0]!]), "INVALID_DATA", /both map to model\.embed_tokens\.weight/);
});

test("the reader's forms are accepted: bigint counts, typed arrays for scores and token types", () => {
  const { meta, table } = fixture("llama-spm");
  const plain = ggufToHf(meta, table);
  meta.set("llama.block_count", 2n);
  meta.set("llama.context_length", 2048n);
  meta.set("tokenizer.ggml.scores", Float32Array.from(meta.get("tokenizer.ggml.scores") as number[]));
  meta.set("tokenizer.ggml.token_type", Int32Array.from(meta.get("tokenizer.ggml.token_type") as number[]));
  assert.deepEqual(ggufToHf(meta, table), plain);
});

test("tensors transformers has no place for are skipped, as it skips them", () => {
  const { meta, table } = fixture("llama");
  const plan = ggufToHf(meta, [...table, { name: "rope_freqs.weight", shape: [4] }, { name: "blk.2.attn_q.weight", shape: [32, 32] }]);
  assert.deepEqual(plan.skipped, ["rope_freqs.weight", "blk.2.attn_q.weight"]);
  assert.equal(plan.tensors.length, table.length);
});

test("the Q/K unpermutation is the inverse of llama.cpp's permute, rows moved whole", () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 0, max: 3 }), (heads, half, cols) => {
      const rows = heads * half * 2;
      const shape = cols === 0 ? [rows] : [rows, cols];
      const n = rows * Math.max(cols, 1);
      const original = Float32Array.from({ length: n }, (_, i) => i + 0.5);
      const back = applyTransform({ kind: "unpermute-rotary", heads }, shape, permute(original, rows, heads));
      assert.deepEqual(back, original);
    }),
    property(200, 35041),
  );
  throwsCode(() => applyTransform({ kind: "unpermute-rotary", heads: 2 }, [6, 2], new Float32Array(12)), "INVALID_DATA", /2 heads/);
  throwsCode(() => applyTransform({ kind: "unpermute-rotary", heads: 1 }, [2, 2], new Float32Array(3)), "SHAPE_MISMATCH", /3 values; 4/);
});

test("the norm offset is float32 addition: rounding, NaN and infinities as numpy's", () => {
  const x = new Float32Array([1, 1.0000001, 2 ** -30, NaN, Infinity, -Infinity, -0, 3.4028234663852886e38]);
  const y = applyTransform({ kind: "offset", delta: -1 }, [x.length], x);
  // 1 + 2^-30 - 1 in float32 is 0 only if rounded once: fround(2^-30 - 1) = -1 (2^-30 is below half an ulp of 1)
  assert.deepEqual(Array.from(y), [0, Math.fround(1.0000001) - 1, -1, NaN, Infinity, -Infinity, -1, 3.4028234663852886e38]);
  const same = new Float32Array(3);
  assert.equal(applyTransform({ kind: "identity" }, [3], same), same);
});

test("recovered merges rank by score, then part lengths, ties in vocabulary order, by code points", () => {
  // "ab" (score 5): a+b; "abc" (score 5): a+bc, ab+c (both parts in vocab); "😀x": 😀 + x
  const tokens = ["a", "b", "c", "bc", "ab", "abc", "😀", "x", "😀x"];
  const scores = [0, 0, 0, 1, 5, 5, 0, 0, 9];
  assert.deepEqual(mergesFromScores(tokens, (i) => scores[i]!), [
    ["😀", "x"],
    ["ab", "c"],
    ["a", "bc"],
    ["a", "b"],
    ["b", "c"],
  ]);
});

test("Python's float repr, as json.dumps writes config.json's floats (expected values printed by CPython 3.11's repr)", () => {
  const cases: [number, string][] = [
    [0.0001, "0.0001"], [1e-5, "1e-05"], [1e16, "1e+16"], [1e15, "1000000000000000.0"], [123.456, "123.456"],
    [1.5e-7, "1.5e-07"], [0.02, "0.02"], [-0, "-0.0"], [0, "0.0"], [5e-324, "5e-324"], [1.7976931348623157e308, "1.7976931348623157e+308"],
    [500000, "500000.0"], [9.999999747378752e-6, "9.999999747378752e-06"], [0.1, "0.1"], [1 / 3, "0.3333333333333333"],
    [2.5e-4, "0.00025"], [12345678901234567, "1.2345678901234568e+16"], [1234567890123456.7, "1234567890123456.8"], [-2, "-2.0"],
    [1e22, "1e+22"], [1e21, "1e+21"],
  ];
  for (const [x, text] of cases) assert.equal(pythonFloatText(x), text, String(x));
  assert.throws(() => pythonFloatText(NaN), RangeError);
});

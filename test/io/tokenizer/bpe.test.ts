/**
 * The tokenizer.json BPE tokenizer against the `tokenizers` library: every fixture folder's
 * tokenizer and small trained ones reaching each normalizer, pre-tokenizer, model option and
 * post-processor, on convert_hf_to_gguf's check text and texts of code, Unicode, emoji,
 * whitespace runs and digits (ids recorded by test/fixtures/tokenizer/make.py); the check-text
 * hash as convert_hf_to_gguf.py computes it; SHA-256 and the regex translation on their own.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { bpeTokenizerFromJson, checkHash, CHECK_TEXT, onigurumaToJs, sha256Hex } from "../../../src/io/tokenizer/index.js";
import { TensorcastError } from "../../../src/errors.js";
import { differences, golden, readJson, ROOT } from "./golden.js";

test("CHECK_TEXT is convert_hf_to_gguf.py's chktxt", () => {
  assert.equal(CHECK_TEXT, golden.chktxt);
});

test("sha256Hex equals node:crypto's SHA-256 on lengths around the block edges", () => {
  for (const n of [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 4097]) {
    const data = new Uint8Array(n).map((_, i) => (i * 131 + n) & 255);
    assert.equal(sha256Hex(data), createHash("sha256").update(data).digest("hex"), `length ${n}`);
  }
});

for (const f of golden.folders) {
  test(`${f.folder}/tokenizer.json: ids equal tokenizers' on ${golden.texts.length} texts, check hash equals convert_hf_to_gguf's`, () => {
    const tj = readJson(`${ROOT}${f.folder}/tokenizer.json`);
    const tok = bpeTokenizerFromJson(tj);
    assert.deepEqual(differences((t) => tok.encode(t), golden.texts, f.ids), []);
    assert.equal(checkHash(tj).hash, f.chkhsh);
  });
}

for (const s of golden.synthetic) {
  test(`synthetic tokenizer ${s.name}: ids equal tokenizers' on ${golden.texts.length} texts`, () => {
    const tok = bpeTokenizerFromJson(s.tokenizer);
    assert.deepEqual(differences((t) => tok.encode(t), golden.texts, s.ids), []);
    assert.equal(checkHash(s.tokenizer).hash, s.chkhsh);
  });
}

test("encode without special tokens leaves out the post-processor's", () => {
  const s = golden.synthetic.find((x) => x.name === "spm-like-byte-fallback")!;
  const tok = bpeTokenizerFromJson(s.tokenizer);
  const withSpecial = tok.encode("hello");
  assert.deepEqual(withSpecial.slice(1, -1), tok.encode("hello", false));
  assert.equal(withSpecial.length, tok.encode("hello", false).length + 2);
});

test("Oniguruma regexes: (?i:...) folded by hand, \\s as Unicode White_Space, scripts named, what JS lacks refused", () => {
  assert.equal(onigurumaToJs("(?i:'s|'ll)|x"), "(?:'[sS]|'[lL][lL])|x");
  assert.equal(onigurumaToJs("(?i:[a-c]d)"), "(?:[aA-cCd]?)".replace("d]?", "]"+"[dD]"));
  assert.match("\u0085", new RegExp(onigurumaToJs("^\\s$"), "u"));
  assert.doesNotMatch("\ufeff", new RegExp(onigurumaToJs("^\\s$"), "u"));
  assert.match("\u6f22", new RegExp(onigurumaToJs("^\\p{Han}$"), "u"));
  assert.match("\u0663", new RegExp(onigurumaToJs("^\\d$"), "u"));
  for (const r of ["a++", "(?>a)", "\\p{N}{1,3}+", "\\Aa"]) {
    assert.throws(() => onigurumaToJs(r), (e: unknown) => e instanceof TensorcastError && e.code === "UNSUPPORTED_TYPE" && e.message.includes(JSON.stringify(r)));
  }
});

test("a tokenizer.json component not run here is refused, naming it and those run", () => {
  const s = golden.synthetic[0]!.tokenizer as Record<string, unknown>;
  const tries: [string, unknown, RegExp][] = [
    ["normalizer", { type: "BertNormalizer" }, /normalizer "BertNormalizer".*NFKC/],
    ["pre_tokenizer", { type: "UnicodeScripts" }, /pre-tokenizer "UnicodeScripts".*Metaspace/],
    ["post_processor", { type: "Fancy" }, /post-processor "Fancy".*TemplateProcessing/],
    ["model", { type: "Unigram", vocab: [] }, /model "Unigram".*BPE/],
  ];
  for (const [key, value, message] of tries) {
    assert.throws(() => bpeTokenizerFromJson({ ...s, [key]: value } as never), (e: unknown) => e instanceof TensorcastError && e.code === "UNSUPPORTED_TYPE" && message.test(e.message));
  }
});

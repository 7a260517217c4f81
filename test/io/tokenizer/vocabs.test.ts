// suite: full
/**
 * Real vocabularies: llama.cpp's models/ggml-vocab-*.gguf (LLAMA_CPP, default /work/llama.cpp;
 * skipped without it) hold a model's tokens and merges; make.py rebuilt each model's
 * tokenizer.json around them and checked that its check-text hash is the one convert_hf_to_gguf.py
 * lists for that model. Here the same tokenizer.json (vocab and merges from the GGUF, the rest
 * from ids.json) gives tokenizers' ids on every text, and its hash names the model as
 * convert_hf_to_gguf does. Reads up to 16 MB GGUFs; a few seconds.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { bytesSource } from "../../../src/io/byte-source.js";
import { readGguf } from "../../../src/io/gguf/header.js";
import type { Json } from "../../../src/io/hf-gguf/json.js";
import { bpePreName } from "../../../src/io/hf-gguf/index.js";
import { bpeTokenizerFromJson, checkHash } from "../../../src/io/tokenizer/index.js";
import { differences, golden } from "./golden.js";

const LLAMA_CPP = process.env.LLAMA_CPP ?? "/work/llama.cpp";

async function withVocab(path: string, rest: Json): Promise<Json> {
  const g = await readGguf(bytesSource(readFileSync(path)), { name: path });
  const items = (key: string): readonly string[] => {
    const v = g.metadata.get(key)?.value as { items: readonly string[] } | undefined;
    if (v === undefined) throw new Error(`${path} has no ${key}`);
    return v.items;
  };
  const vocab: Record<string, number> = {};
  items("tokenizer.ggml.tokens").forEach((t, i) => (vocab[t] = i));
  const tj = JSON.parse(JSON.stringify(rest)) as { model: Record<string, Json> };
  tj.model.vocab = vocab;
  tj.model.merges = [...items("tokenizer.ggml.merges")];
  return tj as unknown as Json;
}

for (const v of golden.vocabs) {
  const path = `${LLAMA_CPP}/${v.gguf}`;
  test(`${v.gguf}: ids equal tokenizers' on ${golden.texts.length} texts; hash ${v.known === null ? "not a known one" : `names it ${v.known}`}`, { skip: existsSync(path) ? false : `no ${path} (set LLAMA_CPP)` }, async () => {
    const tj = await withVocab(path, v.tokenizer);
    const tok = bpeTokenizerFromJson(tj);
    assert.deepEqual(differences((t) => tok.encode(t), golden.texts, v.ids), []);
    assert.equal(checkHash(tj).hash, v.chkhsh);
    if (v.known !== null) {
      const choice = bpePreName(tj);
      assert.equal(choice.name, v.known);
      assert.equal(choice.note, undefined);
    }
  });
}

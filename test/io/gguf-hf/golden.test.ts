/**
 * GGUF -> Hugging Face folder against transformers' own GGUF loading
 * (test/fixtures/gguf-hf/make.py): for each tiny model, from the metadata and the tensors exactly as
 * gguf-py reads and dequantizes them, our plan must give transformers' config.json, tokenizer.json,
 * tokenizer_config.json and chat template, and every state-dict tensor with its name, shape and
 * float32 bits (compared by SHA-256 of the little-endian bytes transformers holds).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ggufToHf, applyTransform, type GgufValue } from "../../../src/io/gguf-hf/index.js";

// tests run from build/test/io/gguf-hf/
const DIR = fileURLToPath(new URL("../../../../test/fixtures/gguf-hf/", import.meta.url));
const CASES = ["llama", "llama-spm", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"];

interface Typed { type: string; itemType?: string; value: unknown }

/** meta.json's typed values as a GGUF reader would hand them over: 64-bit integers as bigint. */
function metadataOf(c: string): { meta: Map<string, GgufValue>; table: Array<{ name: string; ggmlType: string; shape: number[] }> } {
  const raw = JSON.parse(readFileSync(`${DIR}${c}/meta.json`, "utf8")) as {
    metadata: Record<string, Typed>;
    tensors: Array<{ name: string; ggmlType: string; shape: number[] }>;
  };
  const meta = new Map<string, GgufValue>();
  for (const [k, v] of Object.entries(raw.metadata)) {
    if (v.type === "uint64" || v.type === "int64") meta.set(k, BigInt(v.value as string));
    else meta.set(k, v.value as GgufValue);
  }
  return { meta, table: raw.tensors };
}

/** A safetensors file's float32 tensors. */
export function readSafetensors(path: string): Map<string, { shape: number[]; values: Float32Array }> {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString("utf8")) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const out = new Map<string, { shape: number[]; values: Float32Array }>();
  for (const [name, h] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    assert.equal(h.dtype, "F32");
    const [a, b] = h.data_offsets;
    const bytes = buf.subarray(8 + n + a, 8 + n + b);
    const values = new Float32Array(bytes.length / 4);
    new Uint8Array(values.buffer).set(bytes);
    out.set(name, { shape: h.shape, values });
  }
  return out;
}

function sha256(values: Float32Array): string {
  return createHash("sha256").update(new Uint8Array(values.buffer, values.byteOffset, values.byteLength)).digest("hex");
}

for (const c of CASES) {
  test(`${c}: plan equals transformers' GGUF loading`, async (t) => {
    const { meta, table } = metadataOf(c);
    const plan = ggufToHf(meta, table);
    const input = readSafetensors(`${DIR}${c}/input.safetensors`);

    await t.test("config.json", () => {
      const theirs = JSON.parse(readFileSync(`${DIR}${c}/config.json`, "utf8"));
      assert.deepStrictEqual(JSON.parse(plan.files["config.json"]!), theirs);
      assert.deepStrictEqual(plan.config, theirs);
      // byte for byte too: Python's floats (0.0, 500000.0, 1e-05) as json.dumps writes them
      assert.equal(plan.files["config.json"], readFileSync(`${DIR}${c}/config.json`, "utf8"));
    });

    await t.test("generation_config.json, byte for byte", () => {
      assert.equal(plan.files["generation_config.json"], readFileSync(`${DIR}${c}/saved/float32/generation_config.json`, "utf8"));
    });

    await t.test("tokenizer.json, byte for byte", () => {
      const theirs = readFileSync(`${DIR}${c}/tokenizer.json`, "utf8");
      const ours = plan.files["tokenizer.json"]!;
      assert.deepStrictEqual(JSON.parse(ours), JSON.parse(theirs));
      assert.equal(ours, theirs);
    });

    await t.test("tokenizer_config.json and chat template", () => {
      const theirs = readFileSync(`${DIR}${c}/tokenizer_config.json`, "utf8");
      assert.deepStrictEqual(JSON.parse(plan.files["tokenizer_config.json"]!), JSON.parse(theirs));
      assert.equal(plan.files["tokenizer_config.json"], theirs);
      const jinja = `${DIR}${c}/chat_template.jinja`;
      assert.equal(plan.files["chat_template.jinja"], existsSync(jinja) ? readFileSync(jinja, "utf8") : undefined);
    });

    await t.test("tensors: names, shapes and bits", () => {
      const theirs = JSON.parse(readFileSync(`${DIR}${c}/tensors.json`, "utf8")) as Record<string, { shape: number[]; dtype: string; sha256: string }>;
      assert.deepStrictEqual(plan.tensors.map((p) => p.hfName), Object.keys(theirs).sort());
      for (const p of plan.tensors) {
        const want = theirs[p.hfName]!;
        assert.deepStrictEqual(p.shape, want.shape, p.hfName);
        const src = input.get(p.from)!;
        assert.deepStrictEqual(src.shape, p.shape, p.from);
        const values = applyTransform(p.transform, p.shape, src.values);
        assert.equal(sha256(values), want.sha256, `${p.hfName} (from ${p.from}, ${p.transform.kind})`);
      }
    });
  });
}

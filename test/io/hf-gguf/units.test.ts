/**
 * The small rules of HF -> GGUF one by one, against what gguf-py and numpy compute
 * (test/fixtures/hf-gguf/units.json, made by make.py): the model-id parsing and title that give
 * general.name / basename / finetune / version / size_label, the size label of a parameter
 * count, and numpy's float32 -> float16 rounding (crafted edges and random bit patterns).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { idToTitle, modelIdParts, sizeLabel } from "../../../src/io/hf-gguf/general.js";
import { numpyHalfBits } from "../../../src/io/hf-gguf/index.js";

const UNITS = JSON.parse(readFileSync(fileURLToPath(new URL("../../../../test/fixtures/hf-gguf/units.json", import.meta.url)), "utf8")) as {
  model_ids: Array<{ id: string; total: number; name: string | null; organization: string | null; basename: string | null; finetune: string | null; version: string | null; size_label: string | null; title: string | null }>;
  size_labels: Array<{ count: number; label: string }>;
  float16: { f32_bits: number[]; f16_bits: number[] };
};

test("hf-gguf: model ids parse as gguf-py's get_model_id_components and id_to_title", () => {
  for (const c of UNITS.model_ids) {
    const p = modelIdParts(c.id, c.total);
    const got = { name: p.name ?? null, organization: p.organization ?? null, basename: p.basename ?? null, finetune: p.finetune ?? null, version: p.version ?? null, size_label: p.sizeLabel ?? null };
    const want = { name: c.name, organization: c.organization, basename: c.basename, finetune: c.finetune, version: c.version, size_label: c.size_label };
    assert.deepEqual(got, want, `${c.id} with ${c.total} parameters`);
    if (c.title !== null) assert.equal(idToTitle(p.name!), c.title, c.id);
  }
});

test("hf-gguf: size labels are gguf-py's", () => {
  for (const c of UNITS.size_labels) assert.equal(sizeLabel(c.count), c.label, String(c.count));
});

test("hf-gguf: float32 -> float16 is numpy's astype (NaN payloads kept)", () => {
  const bits = UNITS.float16.f32_bits;
  assert.ok(bits.length > 6000);
  for (let i = 0; i < bits.length; i++) {
    const ours = numpyHalfBits(bits[i]!);
    if (ours !== UNITS.float16.f16_bits[i]) assert.fail(`0x${bits[i]!.toString(16)}: ours 0x${ours.toString(16)}, numpy 0x${UNITS.float16.f16_bits[i]!.toString(16)}`);
  }
});

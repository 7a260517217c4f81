// suite: full
/**
 * tensorcast's Hugging Face folder -> GGUF output run by llama.cpp (node-llama-cpp's CPU build,
 * test/support/llama-run.ts): every fixture of test/fixtures/hf-gguf/ converted by `tensorcast
 * convert DIR --to T` to each outtype loads and evaluates a fixed prompt of token ids;
 *
 *   F32            its next-token probabilities are within 1e-3 of transformers' float32 ones
 *                  (test/fixtures/llama-run/golden.json, made by make.py beside it)
 *   every outtype  the file is convert_hf_to_gguf.py's (bytes where the golden file is kept, else
 *                  its SHA-256 and size), and where the golden file is kept, llama.cpp's
 *                  probabilities from it and from ours are the same bits
 *   tokenizer      node-llama-cpp's ids of a set of texts (code, Unicode, emoji, whitespace, digits)
 *                  are the folder's own tokenizer's (sentencepiece's for a tokenizer.model, else
 *                  tokenizer.json's)
 *
 * Where llama.cpp reads a fixture otherwise than transformers or sentencepiece do, the comparison
 * with the folder as it is stays, marked todo with the reason, and a second one pins what llama.cpp
 * does instead (the goldens of both are make.py's):
 *
 *   Gemma 2/3      llama.cpp scales queries by 1/sqrt(head_dim) whatever query_pre_attn_scalar says
 *                  (the fixtures have 256 for a head_dim of 16; real checkpoints have them equal),
 *                  so F32 is compared with transformers run with query_pre_attn_scalar = head_dim
 *   sentencepiece  the fixtures' models were trained with remove_extra_whitespaces (leading and
 *                  trailing spaces dropped, runs collapsed), a normalizer option llama.cpp's SPM
 *                  tokenizer does not have: texts it changes are compared with sentencepiece's ids
 *                  with the option off
 *   Phi-3          llama.cpp sets Phi-3 token attributes when general.name contains "phi3" and then
 *                  needs an <|endoftext|> token, which the fixture's vocabulary lacks: the file run is
 *                  the conversion of a copy of the folder named tiny-phi (general.name "Tiny Phi"),
 *                  the folder's own conversion is still compared with convert_hf_to_gguf.py's
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { llamaRun, llamaRunMissing, type LlamaRunResult } from "../../support/llama-run.js";
import { runCli } from "../../support/cli.js";
import { golden, HF_GGUF_CASES, HF_GGUF_DIR, OUTTYPES } from "./fixtures.js";

interface CaseGolden {
  tokenizer: string;
  prompt: number[];
  probabilities: number[];
  tokens: number[][];
  probabilities_head_dim_scale?: number[];
  remove_extra_whitespaces?: boolean;
  tokens_keep_whitespace?: number[][];
}
const GOLDEN = JSON.parse(readFileSync(join(HF_GGUF_DIR, "..", "llama-run", "golden.json"), "utf8")) as { texts: string[]; cases: Record<string, CaseGolden> };
/** The folder llama.cpp runs, where it is not the case's own (see above). */
const RUN_AS: Record<string, string> = { phi3: "tiny-phi" };

const missing = llamaRunMissing();
const skip = missing !== undefined && process.env.CI !== "true" ? missing : false;
const F32_TOLERANCE = 1e-3;

const sha256 = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");
let dir = "";
/** llama.cpp's results by case and outtype ("golden:T" for convert_hf_to_gguf's kept file). */
const runs = new Map<string, LlamaRunResult>();
const outputs = new Map<string, Uint8Array>();
const key = (c: string, t: string): string => `${c}/${t}`;

before(async () => {
  if (skip !== false) return;
  dir = mkdtempSync(join(tmpdir(), "tensorcast-llama-run-"));
  const jobs = [];
  for (const c of HF_GGUF_CASES) {
    const g = GOLDEN.cases[c]!;
    const runAs = RUN_AS[c];
    if (runAs !== undefined) cpSync(join(HF_GGUF_DIR, c), join(dir, runAs), { recursive: true });
    for (const t of Object.keys(OUTTYPES)) {
      let out = join(dir, `${c}.${t}.gguf`);
      const r = await runCli("convert", join(HF_GGUF_DIR, c), "--to", t, "-o", out);
      assert.equal(r.code, 0, `convert ${c} --to ${t}: ${r.err}`);
      outputs.set(key(c, t), new Uint8Array(readFileSync(out)));
      if (runAs !== undefined) {
        out = join(dir, `${runAs}.${t}.gguf`);
        const r2 = await runCli("convert", join(dir, runAs), "--to", t, "-o", out);
        assert.equal(r2.code, 0, `convert ${runAs} --to ${t}: ${r2.err}`);
      }
      // The tokenizer is the same in every outtype's file: tokenized once, from the F32 one.
      jobs.push({ id: key(c, t), model: out, prompt: g.prompt, texts: t === "f32" ? GOLDEN.texts : undefined });
      const kept = join(HF_GGUF_DIR, `${c}.${t}.gguf`);
      if (golden(c, t).bytes !== undefined) jobs.push({ id: key(c, `golden:${t}`), model: kept, prompt: g.prompt });
    }
  }
  const results = await llamaRun(jobs);
  jobs.forEach((j, i) => runs.set(j.id, results[i]!));
});
after(() => {
  if (dir !== "") rmSync(dir, { recursive: true, force: true });
});

function ran(c: string, t: string): LlamaRunResult & { probabilities: Float32Array } {
  const r = runs.get(key(c, t));
  assert.ok(r, `no run of ${c} ${t}`);
  assert.equal(r.error, undefined, `llama.cpp on ${c} ${t}: ${r.error}`);
  assert.ok(r.probabilities, `no probabilities for ${c} ${t}`);
  return r as LlamaRunResult & { probabilities: Float32Array };
}

function tokensOf(c: string): number[][] {
  const r = runs.get(key(c, "f32"));
  assert.equal(r?.error, undefined, r?.error);
  assert.ok(r?.tokens);
  return r.tokens;
}

function closeToTransformers(c: string, want: number[]): void {
  const { probabilities } = ran(c, "f32");
  assert.equal(probabilities.length, want.length);
  let worst = 0;
  let at = -1;
  for (let i = 0; i < probabilities.length; i++) {
    const d = Math.abs(probabilities[i]! - want[i]!);
    if (d > worst) [worst, at] = [d, i];
  }
  assert.ok(worst <= F32_TOLERANCE, `token ${at}: llama.cpp ${probabilities[at]}, transformers ${want[at]} (difference ${worst})`);
  // The same most likely token, so the tolerance is not met by flat probabilities alone.
  const top = (p: ArrayLike<number>): number => {
    let best = 0;
    for (let i = 1; i < p.length; i++) if (p[i]! > p[best]!) best = i;
    return best;
  };
  assert.equal(top(probabilities), top(want));
}

for (const c of HF_GGUF_CASES) {
  const g = GOLDEN.cases[c]!;
  for (const t of Object.keys(OUTTYPES)) {
    test(`llama.cpp runs ${c} --to ${t}: ${g.probabilities.length} finite probabilities summing to 1, the file convert_hf_to_gguf.py's`, { skip }, () => {
      const { probabilities } = ran(c, t);
      assert.equal(probabilities.length, g.probabilities.length, "vocabulary size");
      let sum = 0;
      for (const p of probabilities) {
        assert.ok(Number.isFinite(p) && p >= 0, `probability ${p}`);
        sum += p;
      }
      assert.ok(Math.abs(sum - 1) < 1e-5, `sum ${sum}`);
      const ours = outputs.get(key(c, t))!;
      const want = golden(c, t);
      if (want.bytes !== undefined) assert.ok(Buffer.from(ours).equals(want.bytes), "not convert_hf_to_gguf.py's bytes");
      assert.equal(ours.length, want.size);
      assert.equal(sha256(ours), want.sha256, "not convert_hf_to_gguf.py's SHA-256");
      if (want.bytes !== undefined) {
        const theirs = ran(c, `golden:${t}`).probabilities;
        const a = new Uint32Array(probabilities.buffer);
        const b = new Uint32Array(theirs.buffer);
        const at = a.findIndex((v, i) => v !== b[i]);
        assert.equal(at, -1, `token ${at}: ${probabilities[at]} from ours, ${theirs[at]} from convert_hf_to_gguf.py's`);
      }
    });
  }
  const headDim = g.probabilities_head_dim_scale;
  test(`llama.cpp on ${c} --to f32: next-token probabilities within ${F32_TOLERANCE} of transformers' float32 ones`,
    { skip, todo: headDim !== undefined ? "llama.cpp scales Gemma queries by 1/sqrt(head_dim) and ignores the fixture's query_pre_attn_scalar (256 for a head_dim of 16)" : undefined },
    () => closeToTransformers(c, g.probabilities));
  if (headDim !== undefined) {
    test(`llama.cpp on ${c} --to f32: within ${F32_TOLERANCE} of transformers' float32 ones with query_pre_attn_scalar = head_dim, llama.cpp's attention scale`, { skip }, () => closeToTransformers(c, headDim));
  }
  GOLDEN.texts.forEach((text, i) => {
    const kept = g.tokens_keep_whitespace?.[i];
    const differs = kept !== undefined && JSON.stringify(kept) !== JSON.stringify(g.tokens[i]);
    const todo = differs ? "the fixture's sentencepiece model has remove_extra_whitespaces, which llama.cpp's SPM tokenizer does not implement" : undefined;
    test(`node-llama-cpp tokenizes ${c}'s ${JSON.stringify(text)} as its ${g.tokenizer} does`, { skip, todo }, () => {
      assert.deepEqual(tokensOf(c)[i], g.tokens[i]);
    });
    if (differs) {
      test(`node-llama-cpp tokenizes ${c}'s ${JSON.stringify(text)} as its sentencepiece does with remove_extra_whitespaces off`, { skip }, () => {
        assert.deepEqual(tokensOf(c)[i], kept);
      });
    }
  });
}

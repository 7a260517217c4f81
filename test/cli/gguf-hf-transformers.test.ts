// suite: full
/**
 * The folders `convert model.gguf -o OUTDIR` writes, loaded by transformers itself: for each of the
 * 8 tiny models (test/fixtures/gguf-hf), `AutoModelForCausalLM.from_pretrained(OUTDIR)` loads every
 * weight (nothing missing, unexpected or mismatched), its float32 state dict is the one
 * transformers' own GGUF loading gave (tensors.json's SHA-256 per tensor), the bfloat16 folder holds
 * what torch's `.to(torch.bfloat16)` makes of it, `AutoTokenizer.from_pretrained(OUTDIR)` gives
 * ids.json's token ids, and, where accelerate is importable (transformers' GGUF loading needs it),
 * the weights equal `from_pretrained(DIR, gguf_file=...)`'s in both types.
 *
 * Python: TENSORCAST_TRANSFORMERS_PYTHON (a python with transformers, torch and safetensors, such
 * as a venv of the machine's local wheels); unset, or without those modules, the test is skipped
 * with the reason. CI's Debian python has neither, so there it skips: the byte-for-byte
 * save_pretrained goldens of test/cli/gguf-hf.test.ts carry the weights everywhere.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { runCli as run } from "../support/cli.js";
import { pythonMissing } from "../support/python.js";
import { scratch } from "../node/helpers.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const FIXTURES = join(ROOT, "test/fixtures/gguf-hf");
const CASES = ["llama", "llama-spm", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"];
const PYTHON = process.env.TENSORCAST_TRANSFORMERS_PYTHON ?? "";

function missing(): string | undefined {
  if (PYTHON === "") return "TENSORCAST_TRANSFORMERS_PYTHON is not set (a python with transformers, torch and safetensors)";
  return pythonMissing("transformers, torch, safetensors", [PYTHON]);
}

const CHECK = String.raw`
import hashlib, importlib.util, json, os, shutil, sys, tempfile
import numpy as np, torch
from transformers import AutoModelForCausalLM, AutoTokenizer

fixtures, work = sys.argv[1], sys.argv[2]
has_accelerate = importlib.util.find_spec("accelerate") is not None
report = {"accelerate": has_accelerate, "cases": {}}

def sha(t):
    a = t.detach().contiguous()
    if a.dtype == torch.bfloat16:
        a = a.view(torch.int16)
    return hashlib.sha256(a.numpy().astype("<" + a.numpy().dtype.str[1:]).tobytes()).hexdigest()

def load(path, **kw):
    m, info = AutoModelForCausalLM.from_pretrained(path, output_loading_info=True, **kw)
    tied = m.config.tie_word_embeddings
    problems = [k for k in info["missing_keys"] if not (tied and k == "lm_head.weight")] + list(info["unexpected_keys"]) + [str(x) for x in info.get("mismatched_keys", [])]
    sd = {k: v for k, v in m.state_dict().items() if not (tied and k == "lm_head.weight")}
    return m, sd, problems

for case in sys.argv[3:]:
    r = {}
    f32 = os.path.join(work, case + "-float32")
    bf16 = os.path.join(work, case + "-bfloat16")
    m32, sd32, r["problems32"] = load(f32)
    mbf, sdbf, r["problemsBf16"] = load(bf16)
    r["dtype32"] = sorted({str(v.dtype) for v in sd32.values()})
    r["dtypeBf16"] = sorted({str(v.dtype) for v in sdbf.values()})
    want = json.load(open(os.path.join(fixtures, case, "tensors.json")))
    r["names"] = sorted(sd32) == sorted(want)
    r["float32VsGguf"] = [k for k in want if k not in sd32 or sha(sd32[k]) != want[k]["sha256"]]
    r["bf16VsTorchCast"] = [k for k in sd32 if k not in sdbf or not torch.equal(sd32[k].to(torch.bfloat16).view(torch.int16), sdbf[k].view(torch.int16))]
    tok = AutoTokenizer.from_pretrained(f32)
    ids = json.load(open(os.path.join(fixtures, case, "ids.json")))
    r["ids"] = [x["text"] for x in ids if tok.encode(x["text"], add_special_tokens=False) != x["ids"] or tok.encode(x["text"]) != x["withSpecial"]]
    if has_accelerate:
        d = tempfile.mkdtemp()
        try:
            shutil.copy(os.path.join(fixtures, case, "model.gguf"), os.path.join(d, "m.gguf"))
            _, g32, _ = load(d, gguf_file="m.gguf")
            _, gbf, _ = load(d, gguf_file="m.gguf", dtype=torch.bfloat16)
            r["vsGgufLoad"] = [k for k in g32 if not torch.equal(g32[k], sd32[k])] + [k for k in gbf if not torch.equal(gbf[k].view(torch.int16), sdbf[k].view(torch.int16))]
        finally:
            shutil.rmtree(d)
    report["cases"][case] = r
print(json.dumps(report))
`;

const why = missing();

test("transformers loads every folder convert model.gguf -o OUTDIR writes: the weights of its own GGUF loading, its tokenizer", { skip: why ?? false }, async () => {
  const dir = scratch();
  for (const c of CASES) {
    for (const to of ["float32", "bfloat16"]) {
      const r = await run("convert", join(FIXTURES, c, "model.gguf"), "--to", to, "-o", join(dir, `${c}-${to}`), "--quiet");
      assert.equal(r.code, 0, r.err);
    }
  }
  writeFileSync(join(dir, "check.py"), CHECK);
  const p = spawnSync(PYTHON, [join(dir, "check.py"), FIXTURES, dir, ...CASES], {
    encoding: "utf8", maxBuffer: 64 << 20, env: { ...process.env, HF_HUB_OFFLINE: "1", TRANSFORMERS_OFFLINE: "1", TRANSFORMERS_VERBOSITY: "error" },
  });
  assert.equal(p.status, 0, p.stderr.slice(-3000));
  const report = JSON.parse(p.stdout.trim().split("\n").pop()!) as { accelerate: boolean; cases: Record<string, Record<string, unknown>> };
  for (const c of CASES) {
    const r = report.cases[c]!;
    assert.deepStrictEqual(r.problems32, [], `${c}: float32 folder loads whole`);
    assert.deepStrictEqual(r.problemsBf16, [], `${c}: bfloat16 folder loads whole`);
    assert.deepStrictEqual([r.dtype32, r.dtypeBf16], [["torch.float32"], ["torch.bfloat16"]], c);
    assert.equal(r.names, true, `${c}: transformers' own names`);
    assert.deepStrictEqual(r.float32VsGguf, [], `${c}: float32 weights equal transformers' GGUF loading`);
    assert.deepStrictEqual(r.bf16VsTorchCast, [], `${c}: bfloat16 weights equal torch's cast of the float32 ones`);
    assert.deepStrictEqual(r.ids, [], `${c}: the tokenizer gives transformers' ids`);
    if (report.accelerate) assert.deepStrictEqual(r.vsGgufLoad, [], `${c}: equal to from_pretrained(gguf_file=)`);
  }
});

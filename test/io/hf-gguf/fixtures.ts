/** The hf-gguf fixtures (test/fixtures/hf-gguf/) read as the core takes them, for the tests beside this. */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { encodeTensor, planHfToGguf, type HfFolderFiles, type HfGgufOuttype, type HfTensorHeader } from "../../../src/io/hf-gguf/index.js";
import { writeGguf } from "../../../src/io/gguf/index.js";

// tests run from build/test/io/hf-gguf/
export const HF_GGUF_DIR = fileURLToPath(new URL("../../../../test/fixtures/hf-gguf/", import.meta.url));
export const HF_GGUF_CASES = ["llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3", "llama3rope", "mixtral", "qwen3_moe"].filter((c) => existsSync(`${HF_GGUF_DIR}${c}/config.json`));
export const OUTTYPES: Record<string, HfGgufOuttype> = { f32: "float32", f16: "float16", bf16: "bfloat16", q8_0: "q8_0" };

const DTYPES: Record<string, string> = { F32: "float32", F16: "float16", BF16: "bfloat16" };

/** A safetensors file's tensors: header entries in file order and their raw bytes. */
function readSafetensors(path: string): { headers: HfTensorHeader[]; bytes: Map<string, Uint8Array> } {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString("utf8")) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const headers: HfTensorHeader[] = [];
  const bytes = new Map<string, Uint8Array>();
  for (const [name, h] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    headers.push({ name, dtype: DTYPES[h.dtype] ?? h.dtype, shape: h.shape });
    bytes.set(name, new Uint8Array(buf.subarray(8 + n + h.data_offsets[0], 8 + n + h.data_offsets[1])));
  }
  return { headers, bytes };
}

export function folderFiles(c: string, folderName = c): HfFolderFiles {
  const d = `${HF_GGUF_DIR}${c}/`;
  const json = (n: string): never | undefined => (existsSync(d + n) ? JSON.parse(readFileSync(d + n, "utf8")) : undefined);
  return {
    folderName,
    config: json("config.json")!,
    tokenizerJson: json("tokenizer.json"),
    tokenizerConfig: json("tokenizer_config.json"),
    tokenizerModel: existsSync(d + "tokenizer.model") ? new Uint8Array(readFileSync(d + "tokenizer.model")) : undefined,
    chatTemplateJinja: existsSync(d + "chat_template.jinja") ? readFileSync(d + "chat_template.jinja", "utf8") : undefined,
    chatTemplateJson: json("chat_template.json"),
  };
}

/** The case's tensors in convert_hf_to_gguf's order: shards by name, each one's tensors by name. */
export function folderTensors(c: string): { headers: HfTensorHeader[]; bytes: Map<string, Uint8Array> } {
  const d = `${HF_GGUF_DIR}${c}/`;
  const shards = readdirSync(d).filter((f) => f.startsWith("model") && f.endsWith(".safetensors")).sort();
  const headers: HfTensorHeader[] = [];
  const bytes = new Map<string, Uint8Array>();
  for (const s of shards) {
    const r = readSafetensors(d + s);
    headers.push(...r.headers.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)));
    for (const [k, v] of r.bytes) bytes.set(k, v);
  }
  return { headers, bytes };
}

/** The GGUF the core makes for a case, in memory. */
export async function convertInMemory(c: string, outtype: HfGgufOuttype, files = folderFiles(c)): Promise<Uint8Array> {
  const { headers, bytes } = folderTensors(c);
  const plan = planHfToGguf(files, headers, outtype);
  const parts: { at: number; b: Uint8Array }[] = [];
  const layout = await writeGguf(
    { write: (b, at) => void parts.push({ at, b: b.slice() }) },
    plan.metadata,
    plan.tensors.map((t) => ({ name: t.name, ggmlType: t.type, dims: t.dims, data: encodeTensor(t, (n) => bytes.get(n)!) })),
  );
  const out = new Uint8Array(layout.size);
  for (const p of parts) out.set(p.b, p.at);
  return out;
}

/** What the case's golden file is: its bytes when kept, else its SHA-256 and size (CASE.gguf.json). */
export function golden(c: string, t: string): { bytes?: Uint8Array; sha256: string; size: number } {
  const path = `${HF_GGUF_DIR}${c}.${t}.gguf`;
  if (existsSync(path)) {
    const bytes = new Uint8Array(readFileSync(path));
    return { bytes, sha256: createHash("sha256").update(bytes).digest("hex"), size: bytes.length };
  }
  const sums = JSON.parse(readFileSync(`${HF_GGUF_DIR}${c}.gguf.json`, "utf8")) as Record<string, { sha256: string; size: number }>;
  return sums[t]!;
}


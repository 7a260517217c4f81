/**
 * Runs GGUF fuzz cases through tensorcast's reader in a child process (gguf.test.ts supervises it).
 * Usage: node gguf-worker.js MANIFEST FROM TO. Each case: openGguf (every part of a split model),
 * every tensor's blocks through ggufRecords and dequantized (ggufTensor), every tensor read through
 * the TensorFile too; and the opened part alone through the core's readGguf over its bytes, which
 * must agree with openGguf. Prints "S i", "O step", "R json" as supervise.ts expects.
 */
import { readFileSync } from "node:fs";
import { TensorcastError } from "../../src/index.js";
import { bytesSource } from "../../src/io/byte-source.js";
import { readGguf, type GgufFile } from "../../src/io/gguf/header.js";
import { ggufRecords, ggufTensor } from "../../src/io/gguf/records.js";
import { GGUF_VALUE_TYPES, type GgufArray } from "../../src/io/gguf/values.js";
import { openGguf } from "../../src/node/io/gguf.js";
import { arrayText, cString, floatDigest, kvText, numberText, tensorText, type GgufView } from "./gguf-view.js";

export interface GgufManifestCase {
  readonly label: string;
  /** Every file of the case, in part order. */
  readonly paths: readonly string[];
  /** The one opened. */
  readonly open: string;
}

export interface GgufLibResult {
  /** openGguf: "ok", "E:CODE message" (a TensorcastError) or "X:..." (anything else: a crash). */
  readonly open: string;
  /** readGguf of the opened part's bytes alone. */
  readonly core: string;
  /** Reading and dequantizing every tensor, when open was ok. */
  readonly read?: string;
  /** Per part (model.files), when open was ok. */
  readonly views?: GgufView[];
  /** The opened part's view from the core's readGguf. */
  readonly coreView?: GgufView;
  /** "part:index" -> digest of ggufTensor's float32 values, for little-endian parts. */
  readonly floats?: Record<string, string>;
  /** Some part is big-endian (gguf.cpp reads only the host's byte order). */
  readonly bigEndian?: boolean;
  /** Tensor names and row-major shapes of the model, for the CLI's output to be checked against. */
  readonly listing?: string[];
  /** Peak resident size of the worker so far, bytes. */
  readonly maxRss: number;
}

export function outcomeOf(e: unknown): string {
  if (e instanceof TensorcastError) return e.code === "INTERNAL" ? `X:INTERNAL ${e.message.slice(0, 300)}` : `E:${e.code} ${e.message.slice(0, 300)}`;
  const err = e as Error;
  return `X:${err?.name}: ${String(err?.message).slice(0, 200)} ${(err?.stack ?? "").split("\n").find((l) => l.includes("/src/"))?.trim() ?? ""}`;
}

function arrayValue(a: GgufArray): string {
  const id = GGUF_VALUE_TYPES.indexOf(a.itemType);
  if (a.itemType === "array") return `array<array>[${a.items.length}] nested`;
  if (a.itemType === "string") return arrayText(id, a.items.length, a.items as readonly string[]);
  const t = a.items as Uint8Array;
  return arrayText(id, t.length, new Uint8Array(t.buffer, t.byteOffset, t.byteLength));
}

export function viewOf(g: GgufFile): GgufView {
  const kv = [...g.metadata.values()].map((e) => {
    const id = GGUF_VALUE_TYPES.indexOf(e.type);
    const value = e.type === "array" ? arrayValue(e.value as GgufArray) : e.type === "string" ? cString(e.value as string) : numberText(e.value as number | bigint | boolean);
    return kvText(e.key, id, value);
  });
  const tensors = g.tensors.map((t) => tensorText(t.name, t.ggmlType.id, [...t.dims, 1, 1, 1, 1].slice(0, 4), t.offset, t.byteLength));
  return { version: g.version, alignment: g.alignment, dataOffset: g.dataOffset, kv, tensors };
}

async function runCase(c: GgufManifestCase): Promise<GgufLibResult> {
  process.stdout.write("O core\n");
  let core: string;
  let coreView: GgufView | undefined;
  try {
    const g = await readGguf(bytesSource(new Uint8Array(readFileSync(c.open))), { name: c.open });
    coreView = viewOf(g);
    core = "ok";
  } catch (e) {
    core = outcomeOf(e);
  }
  process.stdout.write("O open\n");
  let f: Awaited<ReturnType<typeof openGguf>>;
  try {
    f = await openGguf(c.open);
  } catch (e) {
    return { open: outcomeOf(e), core, coreView, maxRss: process.resourceUsage().maxRSS * 1024 };
  }
  try {
    const views = f.model.files.map(viewOf);
    const listing = f.tensors.map((t) => `${t.name}\t[${t.shape.join(",")}]`);
    const floats: Record<string, string> = {};
    process.stdout.write("O read\n");
    let read = "ok";
    try {
      const index = new Map<string, number>();
      for await (const r of ggufRecords(f.model)) {
        const t = f.model.tensors[index.size];
        index.set(r.name, index.size);
        const x = ggufTensor(r);
        const partIndex = f.model.files[t.split].tensors.findIndex((u) => u.name === t.name);
        if (f.model.files[t.split].littleEndian) floats[`${t.split}:${partIndex}`] = floatDigest(x.data as Float32Array);
      }
      for (const t of f.tensors) await t.read(0, t.size);
    } catch (e) {
      read = outcomeOf(e);
    }
    return { open: "ok", core, coreView, read, views, floats, listing, bigEndian: f.model.files.some((g) => !g.littleEndian), maxRss: process.resourceUsage().maxRSS * 1024 };
  } finally {
    await f.close();
  }
}

const [manifest, from, to] = process.argv.slice(2);
const cases = JSON.parse(readFileSync(manifest, "utf8")) as GgufManifestCase[];
for (let i = Number(from); i < Number(to); i++) {
  process.stdout.write(`S ${i}\n`);
  const r = await runCase(cases[i]);
  process.stdout.write(`R ${JSON.stringify(r)}\n`);
}

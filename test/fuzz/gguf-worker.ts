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
  /**
   * Only the reader's own work (openGguf, every tensor read and dequantized): no second reading
   * by the core, no views, so the peak resident size is the reader's (the floods).
   */
  readonly measure?: boolean;
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
  let core = "not run";
  let coreView: GgufView | undefined;
  if (!c.measure) {
    try {
      const g = await readGguf(bytesSource(new Uint8Array(readFileSync(c.open))), { name: c.open });
      coreView = viewOf(g);
      core = "ok";
    } catch (e) {
      core = outcomeOf(e);
    }
  }
  process.stdout.write("O open\n");
  let f: Awaited<ReturnType<typeof openGguf>>;
  try {
    f = await openGguf(c.open);
  } catch (e) {
    return { open: outcomeOf(e), core, coreView, maxRss: process.resourceUsage().maxRSS * 1024 };
  }
  try {
    const views = c.measure ? undefined : f.model.files.map(viewOf);
    const listing = c.measure ? undefined : f.tensors.map((t) => `${t.name}\t[${t.shape.join(",")}]`);
    const floats: Record<string, string> = {};
    process.stdout.write("O read\n");
    let read = "ok";
    try {
      // Tensors come in part order, so the index within its part is a count since the part began.
      let n = 0;
      let part = -1;
      let inPart = 0;
      for await (const r of ggufRecords(f.model)) {
        const t = f.model.tensors[n++];
        inPart = t.split === part ? inPart + 1 : 0;
        part = t.split;
        const x = ggufTensor(r);
        if (!c.measure && f.model.files[t.split].littleEndian) floats[`${t.split}:${inPart}`] = floatDigest(x.data as Float32Array);
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

/** test/fixtures/tokenizer/ids.json, written by make.py there with the `tokenizers` library. */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Json } from "../../../src/io/hf-gguf/json.js";

export const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

export interface Golden {
  readonly chktxt: string;
  readonly texts: readonly string[];
  readonly folders: readonly { folder: string; chkhsh: string; chkhsh_tokenizers: string; ids: number[][] }[];
  readonly synthetic: readonly { name: string; tokenizer: Json; chkhsh: string; ids: number[][] }[];
  readonly vocabs: readonly { name: string; gguf: string; tokenizer: Json; chkhsh: string; known: string | null; ids: number[][] }[];
}

export const golden = JSON.parse(readFileSync(`${ROOT}test/fixtures/tokenizer/ids.json`, "utf8")) as Golden;

export function readJson(path: string): Json {
  return JSON.parse(readFileSync(path, "utf8")) as Json;
}

/** The texts whose ids differ, with both lists, for a readable failure. */
export function differences(encode: (t: string) => number[], texts: readonly string[], want: readonly number[][]): string[] {
  const out: string[] = [];
  texts.forEach((t, i) => {
    const got = encode(t);
    if (got.join(",") !== want[i]!.join(",")) out.push(`${JSON.stringify(t.slice(0, 60))}: got [${got.slice(0, 40).join(", ")}], want [${want[i]!.slice(0, 40).join(", ")}]`);
  });
  return out;
}

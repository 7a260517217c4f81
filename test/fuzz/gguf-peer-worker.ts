/**
 * Runs GGUF fuzz cases through gguf.cpp (gguf-peer.ts) in a child process, each part of a case
 * on its own, as llama.cpp's loader opens them. Usage: node gguf-peer-worker.js MANIFEST FROM TO.
 * gguf.cpp can abort the process on input it asserts about: supervise.ts then records that case's
 * crash, and the test counts it as the peer's, not tensorcast's.
 */
import { readFileSync } from "node:fs";
import { ggmlGgufReader, type GgmlVerdict } from "./gguf-peer.js";
import type { GgufManifestCase } from "./gguf-worker.js";

export interface GgufPeerResult {
  readonly parts: GgmlVerdict[];
}

const read = ggmlGgufReader();
const [manifest, from, to] = process.argv.slice(2);
const cases = JSON.parse(readFileSync(manifest, "utf8")) as GgufManifestCase[];
for (let i = Number(from); i < Number(to); i++) {
  process.stdout.write(`S ${i}\nO gguf_init_from_file\n`);
  const r: GgufPeerResult = { parts: cases[i].paths.map((p) => read(p)) };
  process.stdout.write(`R ${JSON.stringify(r)}\n`);
}

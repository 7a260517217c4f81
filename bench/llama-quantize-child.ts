/**
 * llama.cpp's llama_model_quantize alone in a process, for the benches to time under /usr/bin/time
 * (test-peers' libllama through koffi):
 *
 *   node build/bench/llama-quantize-child.js IN.gguf OUT.gguf PRESET THREADS
 *
 * Exits 0 when it wrote OUT, 1 when llama_model_quantize failed, 2 without the peer.
 */
import { fileURLToPath } from "node:url";
import { llamaPreset } from "../src/ggml/presets.js";
import { llamaQuantPeer } from "../test/support/llama-quant-peer.js";

/** The command that runs this script on `input` (for timed()). */
export function llamaQuantizeArgv(input: string, output: string, preset: string, threads: number): string[] {
  return [process.execPath, fileURLToPath(import.meta.url), input, output, preset, String(threads)];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [input, output, preset, threads] = process.argv.slice(2);
  const peer = llamaQuantPeer();
  if (typeof peer === "string") {
    console.error(peer);
    process.exit(2);
  }
  process.exit(peer.quantize(input!, output!, { ftype: llamaPreset(preset!).ftype, nthread: Number(threads) }) === 0 ? 0 : 1);
}

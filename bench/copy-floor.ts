/**
 * The user-space copy floor for bench/checkpoint.ts: what any converter must at least do with the
 * bytes, with nothing converted. Reads IN in 4 MiB chunks into one reused buffer and writes each
 * (or, with `--half`, its first half: the 2 bytes of bfloat16 a converter writes for each float32
 * element) to a temporary beside OUT, then flushes, renames and flushes the directory, as the
 * converter's AtomicOutput does. cp and cat copy in the kernel (copy_file_range) and never move
 * the bytes through user memory, so they are not a bound a converter can reach; this is.
 *
 *   node build/bench/copy-floor.js IN OUT [--half]
 * @example
 * // node build/bench/copy-floor.js in.safetensors out.bin --half   (1 GiB read, 512 MiB written)
 */
import { open, rename } from "node:fs/promises";
import { dirname } from "node:path";

const [input, output] = process.argv.slice(2);
const half = process.argv.includes("--half");
const chunk = 4 * 1024 * 1024;
const buffer = new Uint8Array(chunk);
const source = await open(input, "r");
const temporary = `${output}.partial`;
const target = await open(temporary, "w");
const size = (await source.stat()).size;
let at = 0;
for (let offset = 0; offset < size; offset += chunk) {
  const n = Math.min(chunk, size - offset);
  const { bytesRead } = await source.read(buffer, 0, n, offset);
  if (bytesRead !== n) throw new Error(`short read at ${offset}: ${bytesRead} of ${n}`);
  const w = half ? n >>> 1 : n;
  await target.write(buffer, 0, w, at);
  at += w;
}
await source.close();
await target.sync();
await target.close();
await rename(temporary, output);
const dir = await open(dirname(output), "r");
await dir.sync();
await dir.close();

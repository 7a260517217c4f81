/**
 * Runs PyTorch fuzz cases through the library in a child process (pytorch.test.ts supervises it
 * under a time and memory limit). Usage: node pytorch-worker.js DIR FROM TO, reading DIR/case-I.pt.
 * Each case: openTensorFile with every tensor read, then (when it opened) convertPytorchFile to
 * safetensors and the output read back: its tensors must equal what was read. Prints "S i", "O step",
 * "R json" as supervise.ts expects.
 */
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { TensorcastError } from "../../src/index.js";
import { openTensorFile } from "../../src/node/index.js";
import { convertPytorchFile } from "../../src/node/convert/pytorch.js";

export interface PytorchCaseResult {
  readonly open: string;
  readonly convert?: string;
  readonly problems: string[];
}

function outcomeOf(e: unknown): string {
  if (e instanceof TensorcastError) return e.code === "INTERNAL" ? `X:INTERNAL ${e.message.slice(0, 200)}` : `E:${e.code}`;
  const err = e as Error;
  return `X:${err?.name}: ${String(err?.message).slice(0, 200)} ${(err?.stack ?? "").split("\n").find((l) => l.includes("/src/"))?.trim() ?? ""}`;
}

async function readAll(path: string): Promise<Map<string, string>> {
  const f = await openTensorFile(path, { format: path.endsWith(".pt") ? "pytorch" : undefined });
  try {
    const out = new Map<string, string>();
    for (const t of f.tensors) out.set(t.name, `${t.dtype.name} [${t.shape}] ${Buffer.from(await t.read(0, t.size)).toString("hex")}`);
    return out;
  } finally {
    await f.close();
  }
}

async function runCase(dir: string, i: number): Promise<PytorchCaseResult> {
  const input = join(dir, `case-${i}.pt`);
  // A folder of its own: the other worker's temporaries are not this case's leftovers.
  const own = join(dir, `out-${i}`);
  rmSync(own, { recursive: true, force: true });
  mkdirSync(own);
  const out = join(own, "out.safetensors");
  const problems: string[] = [];
  let read: Map<string, string> | undefined;
  process.stdout.write("O open\n");
  let open: string;
  try {
    read = await readAll(input);
    open = "ok";
  } catch (e) {
    open = outcomeOf(e);
  }
  let convert: string | undefined;
  if (read) {
    process.stdout.write("O convert\n");
    try {
      const r = await convertPytorchFile(input, out, {});
      convert = "ok";
      const back = await readAll(out);
      for (const t of r.tensors) if (back.get(t.name) !== read.get(t.name)) problems.push(`corrupt output: ${t.name} reads back differently`);
      for (const [kept, names] of Object.entries(r.tied)) for (const n of names) if (read.get(n) !== read.get(kept)) problems.push(`tied ${n} differs from ${kept}`);
    } catch (e) {
      convert = outcomeOf(e);
      if (existsSync(out)) problems.push(`a failed convert left ${out}`);
    }
  }
  const temporaries = readdirSync(own).filter((f) => f.endsWith(".tmp"));
  if (temporaries.length > 0) problems.push(`temporaries left: ${temporaries.join(", ")}`);
  rmSync(own, { recursive: true, force: true });
  return { open, convert, problems };
}

const [dir, from, to] = process.argv.slice(2);
for (let i = Number(from); i < Number(to); i++) {
  process.stdout.write(`S ${i}\n`);
  const r = await runCase(dir, i);
  process.stdout.write(`R ${JSON.stringify(r)}\n`);
}

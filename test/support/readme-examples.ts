/**
 * The README's "Use it" examples, run: each line `expression; // result  (why)` is evaluated and
 * its value printed the way the README writes it, then compared with the comment's result. Lines
 * whose comment is prose (it starts with a letter other than a typed-array name) only have to run.
 * No Node built-ins: the same check runs under Node, Bun, Deno and in browsers (the caller passes
 * the README's text), so a README example that one runtime gets wrong fails there.
 */
import * as tensorcast from "../../src/index.js";

export interface ExampleResult {
  readonly line: string;
  /** The README's result, or undefined when the comment is prose. */
  readonly expected: string | undefined;
  /** What the line printed as, or the error it threw. */
  readonly actual: string;
  readonly ok: boolean;
}

/** A value as the README spells it: `Uint8Array [0x3c, 0x7e]`, `[1, -64]`, `"bfloat16"`, `[2, 3, 1]`. */
export function spellValue(v: unknown): string {
  if (v instanceof Uint8Array) return `Uint8Array [${Array.from(v, (b) => `0x${b.toString(16).padStart(2, "0")}`).join(", ")}]`;
  if (Array.isArray(v)) return `[${v.map(spellValue).join(", ")}]`;
  if (typeof v === "string") return JSON.stringify(v);
  return String(v);
}

/** The lines of the first ```ts block after "## Use it". */
export function exampleLines(readme: string): string[] {
  const section = readme.slice(readme.indexOf("## Use it"));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error("README: no ```ts block under \"## Use it\"");
  return block[1].split("\n").filter((l) => l.trim() !== "" && !l.startsWith("import "));
}

/** Runs every example line of `readme` in order; `const` lines carry their names to later lines. */
export function runReadmeExamples(readme: string): ExampleResult[] {
  const names = Object.keys(tensorcast).filter((k) => /^[A-Za-z_$][\w$]*$/.test(k));
  const scope: Record<string, unknown> = {};
  const results: ExampleResult[] = [];
  for (const line of exampleLines(readme)) {
    const comment = line.indexOf("// ");
    const code = (comment >= 0 ? line.slice(0, comment) : line).trim().replace(/;$/, "");
    const note = comment >= 0 ? line.slice(comment + 3).trim() : "";
    const resultText = note.split(/\s+\(/)[0].trim();
    const expected = /^([[\-"\d]|Uint8Array |NaN|Infinity|true|false)/.test(resultText) ? resultText : undefined;
    const declared = /^const\s+([A-Za-z_$][\w$]*)\s*=\s*([\s\S]*)$/.exec(code);
    const expression = declared ? declared[2] : code;
    let actual: string;
    let ok: boolean;
    try {
      const locals = Object.keys(scope);
      // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the README's own code, by design
      const run = new Function(...names, ...locals, `return (${expression});`) as (...a: unknown[]) => unknown;
      const value = run(...names.map((n) => (tensorcast as Record<string, unknown>)[n]), ...locals.map((n) => scope[n]));
      if (declared) scope[declared[1]] = value;
      actual = spellValue(value);
      ok = expected === undefined || actual === expected;
    } catch (e) {
      actual = `threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`;
      ok = false;
    }
    results.push({ line: line.trim(), expected, actual, ok });
  }
  return results;
}

/**
 * The module hooks behind corrupt-writer.ts. Faults (TENSORCAST_TEST_CORRUPT):
 * - "graph-length": the ONNX writer bug fixed in a041cdd, put back: the graph's length ignores
 *   that a rewritten initializer's own length prefix can change size, so a model whose initializer
 *   crosses 128 bytes is written with a wrong graph length.
 * - "short": every plan's size one byte short, so the file is truncated whatever its format.
 * The hooks throw when writer.js no longer has the text they alter, so a test using them fails
 * loudly instead of testing nothing.
 */
interface LoadResult {
  format?: string;
  source?: string | ArrayBuffer | ArrayBufferView;
  shortCircuit?: boolean;
}
type NextLoad = (url: string, context: unknown) => Promise<LoadResult>;

const FIXED_GRAPH_LENGTH = "graphLength += r.head.length + r.bodyLength - (r.scanned.end - r.scanned.fieldStart);";
const BUGGY_GRAPH_LENGTH = "graphLength += r.bodyLength - (r.scanned.end - r.scanned.start);";
const PLAN = "export async function planOutput(";

function replaceOnce(source: string, from: string, to: string): string {
  if (!source.includes(from)) throw new Error(`corrupt-writer-hooks: writer.js no longer contains ${JSON.stringify(from)}; update the fault`);
  return source.replace(from, to);
}

function corrupt(source: string, fault: string | undefined): string {
  switch (fault) {
    case "graph-length":
      return replaceOnce(source, FIXED_GRAPH_LENGTH, BUGGY_GRAPH_LENGTH);
    case "short":
      return (
        replaceOnce(source, PLAN, "async function planOutputAsWritten(") +
        `\nexport async function planOutput(...args) {\n  const plan = await planOutputAsWritten(...args);\n  return { ...plan, size: plan.size - 1 };\n}\n`
      );
    default:
      throw new Error(`corrupt-writer-hooks: TENSORCAST_TEST_CORRUPT=${JSON.stringify(fault)} is not a fault (graph-length, short)`);
  }
}

export async function load(url: string, context: unknown, nextLoad: NextLoad): Promise<LoadResult> {
  const result = await nextLoad(url, context);
  if (!url.endsWith("/dist/node/io/writer.js")) return result;
  const source = typeof result.source === "string" ? result.source : new TextDecoder().decode(result.source as Uint8Array);
  return { ...result, source: corrupt(source, process.env.TENSORCAST_TEST_CORRUPT) };
}

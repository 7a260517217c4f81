/**
 * The module hooks behind corrupt-writer.ts. Faults (TENSORCAST_TEST_CORRUPT):
 * - "graph-length": the ONNX writer bug fixed in a041cdd, put back: the graph's length ignores
 *   that a rewritten initializer's own length prefix can change size, so a model whose initializer
 *   crosses 128 bytes is written with a wrong graph length.
 * - "short": every plan's size one byte short, so the file is truncated whatever its format.
 * - "side-offset": an .onnx model's external_data offsets 64 bytes past where its side file
 *   holds the tensors.
 * - "side-bytes": file.js records, for each write to a side file, the digest of bytes other than
 *   those written (its first byte flipped), as if the disk had kept something else.
 * The hooks throw when writer.js / file.js no longer have the text they alter, so a test using
 * them fails loudly instead of testing nothing.
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
const SIDE_OFFSET = "externalTensorProto(t.name, t.dtype, t.shape, extra, side.location, offset, t.byteLength)";
const DIGEST = "this.written?.push({ offset: position, length: bytes.length, digest: sha1Of(bytes) });";

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
    case "side-offset":
      return replaceOnce(source, SIDE_OFFSET, SIDE_OFFSET.replace("offset, t.byteLength)", "offset + 64, t.byteLength)"));
    case "side-bytes":
      return source;
    default:
      throw new Error(`corrupt-writer-hooks: TENSORCAST_TEST_CORRUPT=${JSON.stringify(fault)} is not a fault (graph-length, short, side-offset, side-bytes)`);
  }
}

function corruptFile(source: string, fault: string | undefined): string {
  if (fault !== "side-bytes") return source;
  return replaceOnce(source, DIGEST, DIGEST.replace("sha1Of(bytes)", "sha1Of(bytes.map((b, i) => (i === 0 ? b ^ 1 : b)))"));
}

export async function load(url: string, context: unknown, nextLoad: NextLoad): Promise<LoadResult> {
  const result = await nextLoad(url, context);
  const writer = url.endsWith("/dist/node/io/writer.js");
  if (!writer && !url.endsWith("/dist/node/io/file.js")) return result;
  const source = typeof result.source === "string" ? result.source : new TextDecoder().decode(result.source as Uint8Array);
  const fault = process.env.TENSORCAST_TEST_CORRUPT;
  return { ...result, source: writer ? corrupt(source, fault) : corruptFile(source, fault) };
}

/** Helpers of the GGUF writer's tests: a sink into memory, and a read file's content to write back. */
import assert from "node:assert/strict";
import type { GgufFile } from "../../../src/io/gguf/header.js";
import type { GgufSink, GgufTensorToWrite } from "../../../src/io/gguf/write.js";
import type { GgufMetadataEntry } from "../../../src/io/gguf/values.js";

/** A sink into memory that checks the writer's positions run on without gaps. */
export function memorySink(): GgufSink & { bytes(): Uint8Array } {
  const parts: Uint8Array[] = [];
  let at = 0;
  return {
    write(b, position) {
      assert.equal(position, at, "the writer writes in order, without gaps");
      parts.push(b.slice());
      at += b.length;
    },
    bytes() {
      const out = new Uint8Array(at);
      let p = 0;
      for (const b of parts) {
        out.set(b, p);
        p += b.length;
      }
      return out;
    },
  };
}

/** The file's own metadata and tensors, for writing back; data in pieces of at most `piece` bytes. */
export function contentOf(g: GgufFile, bytes: Uint8Array, piece = 4096): { metadata: GgufMetadataEntry[]; tensors: GgufTensorToWrite[] } {
  return {
    metadata: [...g.metadata.values()],
    tensors: g.tensors.map((t) => ({
      name: t.name, ggmlType: t.ggmlType, dims: t.dims,
      data: (function* () {
        for (let at = 0; at < t.byteLength; at += piece) yield bytes.subarray(t.position + at, t.position + Math.min(t.byteLength, at + piece));
      })(),
    })),
  };
}


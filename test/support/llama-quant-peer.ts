/**
 * llama.cpp's llama_model_quantize, the live peer of `tensorcast quantize IN.gguf`: node-llama-cpp's
 * libllama (test-peers/), called through koffi with llama_model_quantize_default_params() and the
 * options llama-quantize's command line sets (tools/quantize/quantize.cpp), the importance matrix
 * and its quantize.imatrix.* pairs included. One thread, as the result does not depend on it.
 *
 * Missing peers are a reason string, as in ggml-peer.ts.
 */
import { join } from "node:path";
import { GGML_TYPE_COUNT, GGML_TYPES } from "../../src/ggml/index.js";
import { PEERS, peerKoffi } from "./ggml-peer.js";

export const LIBLLAMA = join(PEERS, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64", "libllama.v0.4.0.so");

export interface LlamaQuantizeOptions {
  ftype: number;
  outputTensorType?: string;
  tokenEmbeddingType?: string;
  allowRequantize?: boolean;
  leaveOutputTensor?: boolean;
  pure?: boolean;
  /** --tensor-type pairs, the pattern already lower-cased. */
  tensorTypes?: { pattern: string; type: string }[];
  /** Weights by tensor name, as llama-quantize hands them over after reading its file. */
  imatrix?: ReadonlyMap<string, Float32Array>;
  /** The kv overrides llama-quantize adds with an importance matrix, in order. */
  kvOverrides?: { key: string; str?: string; int?: number }[];
  /** keep_split: the output path is then a prefix, PREFIX-0000k-of-0000n.gguf the files. */
  keepSplit?: boolean;
  /** Threads (default 1: the bytes do not depend on it; benches give more). */
  nthread?: number;
}

export interface LlamaQuantPeer {
  /** llama_model_quantize(input, output, params): 0 on success, as the C function returns. */
  quantize(input: string, output: string, opts: LlamaQuantizeOptions): number;
}


let cached: LlamaQuantPeer | string | undefined;

/** The ggml type id of a name in any case. */
function typeId(name: string | undefined): number {
  if (name === undefined) return GGML_TYPE_COUNT;
  const t = GGML_TYPES.find((r) => r.name === name.toUpperCase());
  if (!t) throw new Error(`no GGML type ${name}`);
  return t.id;
}

/** The peer, or why it is missing. */
export function llamaQuantPeer(): LlamaQuantPeer | string {
  if (cached !== undefined) return cached;
  const koffi = peerKoffi(LIBLLAMA, "the llama.cpp peer");
  if (typeof koffi === "string") return (cached = koffi);
  const lib = koffi.load(LIBLLAMA);
  koffi.struct("llama_model_imatrix_data", { name: "const char *", data: "const float *", size: "size_t" });
  koffi.struct("llama_model_tensor_override", { pattern: "const char *", type: "int" });
  koffi.struct("llama_model_quantize_params", {
    nthread: "int32_t", ftype: "int", output_tensor_type: "int", token_embedding_type: "int",
    allow_requantize: "bool", quantize_output_tensor: "bool", only_copy: "bool", pure: "bool", keep_split: "bool", dry_run: "bool",
    imatrix: "llama_model_imatrix_data *", kv_overrides: "uint8_t *", tt_overrides: "llama_model_tensor_override *", prune_layers: "void *", max_buf_size: "size_t",
  });
  const defaults = lib.func("llama_model_quantize_params llama_model_quantize_default_params()") as () => Record<string, unknown>;
  const quantize = lib.func("uint32_t llama_model_quantize(const char *a, const char *b, const llama_model_quantize_params *p)");
  const backendInit = lib.func("void llama_backend_init()");
  backendInit();
  // llama.cpp logs every tensor to stderr; the tests compare files, not logs.
  const LogCallback = koffi.proto("void ggml_log_callback(int level, const char *text, void *user_data)");
  const logSet = lib.func("void llama_log_set(ggml_log_callback *cb, void *user_data)");
  logSet(koffi.register(() => undefined, koffi.pointer(LogCallback)), null);
  cached = {
    quantize(input, output, opts) {
      const p = defaults();
      p.nthread = opts.nthread ?? 1;
      p.ftype = opts.ftype;
      if (opts.outputTensorType !== undefined) p.output_tensor_type = typeId(opts.outputTensorType);
      if (opts.tokenEmbeddingType !== undefined) p.token_embedding_type = typeId(opts.tokenEmbeddingType);
      p.allow_requantize = opts.allowRequantize === true;
      p.quantize_output_tensor = opts.leaveOutputTensor !== true;
      p.pure = opts.pure === true;
      p.keep_split = opts.keepSplit === true;
      if (opts.imatrix) {
        p.imatrix = [...[...opts.imatrix].map(([name, data]) => ({ name, data, size: data.length })), { name: null, data: null, size: 0 }];
      }
      if (opts.tensorTypes && opts.tensorTypes.length > 0) {
        p.tt_overrides = [...opts.tensorTypes.map((t) => ({ pattern: t.pattern, type: typeId(t.type) })), { pattern: null, type: typeId(undefined) }];
      }
      if (opts.kvOverrides && opts.kvOverrides.length > 0) {
        // struct llama_model_kv_override: int tag; char key[128]; (4 bytes of padding) union { int64; double; bool; char[128] }.
        const SIZE = 264;
        const buf = Buffer.alloc(SIZE * (opts.kvOverrides.length + 1));
        opts.kvOverrides.forEach((o, i) => {
          const at = i * SIZE;
          buf.writeInt32LE(o.str !== undefined ? 3 : 0, at);
          buf.write(o.key, at + 4, 127, "utf8");
          if (o.str !== undefined) buf.write(o.str, at + 136, 127, "utf8");
          else buf.writeBigInt64LE(BigInt(o.int ?? 0), at + 136);
        });
        p.kv_overrides = buf;
      }
      return Number(quantize(input, output, p));
    },
  };
  return cached;
}

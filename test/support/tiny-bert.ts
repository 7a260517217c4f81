/**
 * A model folder transformers.js loads as a BERT feature extractor, written by the test: config.json
 * (model_type "bert"), tokenizer.json (WordPiece over a small vocabulary that spells any lowercase
 * word letter by letter) and tokenizer_config.json, and onnx/model.onnx, one encoder layer of width 64
 * with the inputs and output transformers.js' BertModel feeds and reads (input_ids, attention_mask,
 * token_type_ids -> last_hidden_state). What the quantizers act on, as in a real BERT: two Gather
 * embeddings (word, token type) and six MatMuls with constant 2-D weights (Q, K, V, the attention
 * output, the two feed-forward ones); the two attention MatMuls of activations (Q K^T, P V) have no
 * constant B and stay float.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { encodeModel } from "../../src/io/onnx/encode.js";
import type { NamedTensor } from "../../src/io/onnx/tensorproto.js";
import { Tensor } from "../../src/index.js";
import { modelOf, type NodeSpec } from "./onnx-model.js";
import { random } from "../node/helpers.js";

export const HIDDEN = 64;
const INTERMEDIATE = 128;
const SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
const WORDS = ["the", "a", "model", "runs", "in", "every", "browser", "and", "on", "node", "quantized", "weights", "are", "small",
  "fast", "float", "bits", "of", "to", "is", ".", ",", "!", "?"];
const LETTERS = [..."abcdefghijklmnopqrstuvwxyz0123456789"];

/** The vocabulary: special tokens, whole words, then every letter and digit alone and as a continuation. */
export const VOCAB: readonly string[] = [...SPECIAL, ...WORDS, ...LETTERS, ...LETTERS.map((l) => `##${l}`)];

/** Standard normal samples (Box-Muller over mulberry32), times `scale`. */
function normal(n: number, scale: number, next: () => number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const u = Math.max(next(), 1e-12);
    const v = next();
    const r = Math.sqrt(-2 * Math.log(u)) * scale;
    out[i] = r * Math.cos(2 * Math.PI * v);
    if (i + 1 < n) out[i + 1] = r * Math.sin(2 * Math.PI * v);
  }
  return out;
}

/** onnx/model.onnx: embeddings + LayerNorm, one single-head self-attention block and a ReLU feed-forward block, each with a residual and a LayerNorm (opset 17, IR 8). */
export function tinyBertModel(seed = 26): Uint8Array {
  const rng = random(seed);
  const unit = () => rng() / 2 ** 32;
  const inits: NamedTensor[] = [];
  const f32 = (name: string, shape: number[], values: Float32Array) => {
    inits.push({ name, tensor: Tensor.fromBytes(values, "float32", shape) });
    return name;
  };
  const weight = (name: string, k: number, n: number) => f32(name, [k, n], normal(k * n, 1 / Math.sqrt(k), unit));
  const vector = (name: string, n: number, scale: number, base = 0) => f32(name, [n], normal(n, scale, unit).map((v) => v + base));
  const nodes: NodeSpec[] = [];
  const op = (opType: string, inputs: string[], output: string, attributes: NodeSpec["attributes"] = []) => {
    nodes.push({ opType, inputs, outputs: [output], attributes, name: output });
    return output;
  };
  const layerNorm = (x: string, name: string) =>
    op("LayerNormalization", [x, vector(`${name}.gamma`, HIDDEN, 0.1, 1), vector(`${name}.beta`, HIDDEN, 0.1)], name,
      [{ name: "axis", type: "INT", i: -1 }, { name: "epsilon", type: "FLOAT", f: 1e-12 }]);
  const dense = (x: string, name: string, k: number, n: number) =>
    op("Add", [op("MatMul", [x, weight(`${name}.weight`, k, n)], `${name}.matmul`), vector(`${name}.bias`, n, 0.1)], name);

  const words = op("Gather", [f32("word_embeddings", [VOCAB.length, HIDDEN], normal(VOCAB.length * HIDDEN, 1, unit)), "input_ids"], "words");
  const types = op("Gather", [f32("token_type_embeddings", [2, HIDDEN], normal(2 * HIDDEN, 1, unit)), "token_type_ids"], "types");
  const x0 = layerNorm(op("Add", [words, types], "embeddings"), "embeddings.norm");
  const q = dense(x0, "query", HIDDEN, HIDDEN);
  const k = dense(x0, "key", HIDDEN, HIDDEN);
  const v = dense(x0, "value", HIDDEN, HIDDEN);
  const scores = op("Mul", [op("MatMul", [q, op("Transpose", [k], "key.t", [{ name: "perm", type: "INTS", ints: [0, 2, 1] }])], "scores.raw"),
    f32("scale", [], Float32Array.of(1 / Math.sqrt(HIDDEN)))], "scores");
  // BERT's extended mask: (1 - mask) * -10000 over the keys, broadcast over the queries.
  const mask = op("Cast", ["attention_mask"], "mask.float", [{ name: "to", type: "INT", i: 1 }]);
  const bias = op("Unsqueeze", [op("Mul", [op("Sub", [f32("one", [], Float32Array.of(1)), mask], "mask.inverse"), f32("minus", [], Float32Array.of(-10000))], "mask.bias"),
    "mask.axes"], "mask.bias3");
  inits.push({ name: "mask.axes", tensor: Tensor.fromBytes(BigInt64Array.of(1n), "int64", [1]) });
  const probs = op("Softmax", [op("Add", [scores, bias], "scores.masked")], "probs", [{ name: "axis", type: "INT", i: -1 }]);
  const context = op("MatMul", [probs, v], "context");
  const x1 = layerNorm(op("Add", [x0, dense(context, "attention.output", HIDDEN, HIDDEN)], "attention.residual"), "attention.norm");
  const hidden = op("Relu", [dense(x1, "intermediate", HIDDEN, INTERMEDIATE)], "intermediate.relu");
  const x2 = op("Add", [x1, dense(hidden, "output", INTERMEDIATE, HIDDEN)], "output.residual");
  nodes.push({ opType: "LayerNormalization", inputs: [x2, vector("output.norm.gamma", HIDDEN, 0.1, 1), vector("output.norm.beta", HIDDEN, 0.1)],
    outputs: ["last_hidden_state"], name: "output.norm", attributes: [{ name: "axis", type: "INT", i: -1 }, { name: "epsilon", type: "FLOAT", f: 1e-12 }] });

  const ids = (name: string) => ({ name, elemType: 7, shape: ["batch_size", "sequence_length"] });
  const model = modelOf({
    inputs: [ids("input_ids"), ids("attention_mask"), ids("token_type_ids")],
    outputs: [{ name: "last_hidden_state", elemType: 1, shape: ["batch_size", "sequence_length", HIDDEN] }],
    nodes, opset: 17, irVersion: 8, graphName: "tiny_bert",
  });
  model.graph.initializers.push(...inits);
  return encodeModel(model, { producerName: "tensorcast-test" });
}

/** tokenizer.json: BERT's normalizer, pre-tokenizer, [CLS] ... [SEP] post-processor and WordPiece model over VOCAB. */
function tokenizerJson(): unknown {
  const id = (t: string) => VOCAB.indexOf(t);
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: SPECIAL.map((content, i) => ({ id: i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: { type: "BertProcessing", sep: ["[SEP]", id("[SEP]")], cls: ["[CLS]", id("[CLS]")] },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab: Object.fromEntries(VOCAB.map((t, i) => [t, i])) },
  };
}

/**
 * Writes a model folder `dir` transformers.js loads as a BERT: config.json, tokenizer.json,
 * tokenizer_config.json and `model` as onnx/model.onnx (any model reading input_ids below VOCAB's
 * length and writing last_hidden_state).
 */
export function writeModelFolder(dir: string, model: Uint8Array): void {
  mkdirSync(join(dir, "onnx"), { recursive: true });
  const config = {
    model_type: "bert", architectures: ["BertModel"], hidden_size: HIDDEN, intermediate_size: INTERMEDIATE, num_attention_heads: 1,
    num_hidden_layers: 1, vocab_size: VOCAB.length, type_vocab_size: 2, max_position_embeddings: 512, pad_token_id: 0,
  };
  const tokenizerConfig = {
    tokenizer_class: "BertTokenizer", do_lower_case: true, model_max_length: 512,
    cls_token: "[CLS]", sep_token: "[SEP]", pad_token: "[PAD]", unk_token: "[UNK]", mask_token: "[MASK]",
  };
  writeFileSync(join(dir, "config.json"), JSON.stringify(config, null, 2));
  writeFileSync(join(dir, "tokenizer.json"), JSON.stringify(tokenizerJson()));
  writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify(tokenizerConfig, null, 2));
  writeFileSync(join(dir, "onnx", "model.onnx"), model);
}

/** Writes the tiny BERT's folder `dir` (writeModelFolder with tinyBertModel()). */
export function writeTinyBert(dir: string): void {
  writeModelFolder(dir, tinyBertModel());
}

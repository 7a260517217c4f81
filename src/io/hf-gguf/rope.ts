/**
 * Llama 3's rope scaling (rope_type "llama3"): convert_hf_to_gguf.py's LlamaModel writes no
 * rope.scaling key for it but a rope_freqs tensor, one factor per rotary frequency, computed with
 * torch in float32. Each step here is the float32 operation torch performs, rounded as it rounds:
 * a Python number divided by a tensor is torch's reciprocal times the number (two roundings), a
 * tensor divided by a number one rounding, comparisons against a number in float32.
 *
 * torch's `base ** t` is not correctly rounded: on x86 its vectorized kernel (Sleef's powf,
 * within 1 ULP) takes whole runs of 2 x the vector width (16 frequencies under AVX2) and glibc's
 * powf the rest. Here the power is the correctly rounded one (float64 pow, rounded once), so a
 * factor inside the smoothed band can differ in its last bit where torch's power did; the
 * factors outside the band (1 and `factor`) never do. test/fixtures/hf-gguf/make.py records
 * torch's factors for the configurations test/io/hf-gguf/rope.test.ts checks.
 */
import { TensorcastError } from "../../errors.js";
import { isObject, type Json } from "./json.js";

const f = Math.fround;

export interface Llama3Rope {
  /** rope_theta (10000 when absent). */
  readonly base: number;
  /** The rotary dimension: head_dim, else hidden_size / num_attention_heads. */
  readonly dim: number;
  readonly factor: number;
  readonly lowFreqFactor: number;
  readonly highFreqFactor: number;
  readonly originalContext: number;
}

/** LlamaModel.generate_extra_tensors' factors, one per pair of rotary dimensions, as float32. */
export function llama3RopeFactors(r: Llama3Rope): Float32Array {
  const { base, dim, factor, lowFreqFactor: low, highFreqFactor: high, originalContext: ctx } = r;
  const out = new Float32Array(Math.ceil(dim / 2));
  // the Python floats, each cast to float32 where a tensor meets it
  const lowWavelen = f(ctx / low);
  const highWavelen = f(ctx / high);
  const twoPi = f(2 * Math.PI);
  const b = f(base);
  for (let k = 0; k < out.length; k++) {
    const x = f((2 * k) / dim);
    const freq = f(1 / f(Math.pow(b, x)));
    const wavelen = f(f(1 / freq) * twoPi);
    if (wavelen < highWavelen) out[k] = 1;
    else if (wavelen > lowWavelen) out[k] = factor;
    else {
      const smooth = f(f(f(f(1 / wavelen) * f(ctx)) - f(low)) / f(high - low));
      out[k] = f(1 / f(f(f(1 - smooth) / f(factor)) + smooth));
    }
  }
  return out;
}

const num = (v: Json | undefined, d: number, what: string): number => {
  const x = v === undefined || v === null ? d : v;
  if (typeof x !== "number" || !Number.isFinite(x)) throw new TensorcastError("INVALID_DATA", `config.json: llama3 rope ${what} is ${JSON.stringify(v)}, not a number`);
  return x;
};

/**
 * The llama3 parameters of a model's rope parameters (TextModel's merged ones), with
 * convert_hf_to_gguf's defaults, or undefined when its rope_type is not "llama3".
 */
export function llama3Rope(rp: { readonly [k: string]: Json }, h: { readonly [k: string]: Json }): Llama3Rope | undefined {
  const p = isObject(rp.full_attention) ? rp.full_attention : rp;
  if (typeof p.rope_type !== "string" || p.rope_type.toLowerCase() !== "llama3") return undefined;
  let dim = h.head_dim;
  if (dim === undefined || dim === null) {
    const hidden = h.hidden_size;
    const heads = h.num_attention_heads;
    if (typeof hidden !== "number" || typeof heads !== "number" || !Number.isSafeInteger(hidden) || !Number.isSafeInteger(heads) || heads <= 0) {
      throw new TensorcastError("INVALID_DATA", `config.json: hidden_size ${JSON.stringify(hidden)} / num_attention_heads ${JSON.stringify(heads)} gives no rotary dimension`);
    }
    dim = Math.floor(hidden / heads);
  }
  if (typeof dim !== "number" || !Number.isSafeInteger(dim) || dim <= 0) throw new TensorcastError("INVALID_DATA", `config.json: head_dim is ${JSON.stringify(dim)}, not a count`);
  return {
    base: num(p.rope_theta, 10000, "rope_theta"),
    dim,
    factor: num(p.factor, 8, "factor"),
    lowFreqFactor: num(p.low_freq_factor, 1, "low_freq_factor"),
    highFreqFactor: num(p.high_freq_factor, 4, "high_freq_factor"),
    originalContext: num(p.original_max_position_embeddings, 8192, "original_max_position_embeddings"),
  };
}

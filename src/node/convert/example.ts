/**
 * The built-in example checkpoint (what `npm start` converts): a tiny safetensors file shaped like
 * a language model's, with values chosen to show what a conversion does: ordinary weights that
 * round, a row of outliers (448 is float8e4m3fn's max, 464 rounds to it, 480 and 1000 saturate,
 * 65504 is float16's max, 1e-7 underflows, and a NaN), a float16 norm, and integer position ids
 * that a float conversion leaves alone. Built deterministically, without randomness.
 * test/fixtures/checkpoints/example.safetensors holds the same bytes, made by an independent
 * generator beside it.
 */
import { Tensor } from "../../index.js";
import { encodeSafetensorsHeader } from "../io/safetensors.js";

export const EXAMPLE_METADATA: Readonly<Record<string, string>> = { format: "pt", source: "tensorcast built-in example" };

/** The example's tensors, in file order. */
export function exampleTensors(): { name: string; tensor: Tensor }[] {
  const wave = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));
  return [
    { name: "embed.weight", tensor: Tensor.fromValues(wave(128, (i) => Math.fround(Math.sin(i * 0.37) * 0.8)), "float32", [8, 16]) },
    { name: "layers.0.attn.qkv.weight", tensor: Tensor.fromValues(wave(192, (i) => Math.fround(Math.cos(i * 0.11) * 0.05 * (1 + (i % 7)))), "float32", [16, 12]) },
    { name: "layers.0.mlp.up.weight", tensor: Tensor.fromValues(wave(64, (i) => Math.fround((i - 32) / 1024)), "float32", [4, 16]) },
    { name: "layers.0.norm.weight", tensor: Tensor.fromValues(wave(16, (i) => 1 + i / 64), "float16", [16]) },
    { name: "outliers", tensor: Tensor.fromValues([0.1, 1.5, 448, 464, 480, 1000, 65504, 1e-7, -0, NaN].map(Math.fround), "float32", [10]) },
    { name: "position_ids", tensor: Tensor.fromValues(wave(16, (i) => i), "int64", [1, 16]) },
  ];
}

/** The example checkpoint's bytes. */
export function exampleCheckpoint(): Uint8Array {
  const tensors = exampleTensors();
  const header = encodeSafetensorsHeader(
    tensors.map(({ name, tensor }) => ({ name, dtype: tensor.dtype, shape: tensor.shape, size: tensor.size, byteLength: tensor.bytes().length })),
    EXAMPLE_METADATA,
  );
  const total = header.length + tensors.reduce((n, t) => n + t.tensor.bytes().length, 0);
  const out = new Uint8Array(total);
  out.set(header);
  let at = header.length;
  for (const { tensor } of tensors) {
    out.set(tensor.bytes(), at);
    at += tensor.bytes().length;
  }
  return out;
}

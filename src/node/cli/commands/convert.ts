/**
 * `tensorcast convert IN --to T -o OUT`: changes the type of a checkpoint's tensors, streaming,
 * and prints what happened to each tensor. `--example` converts the built-in example checkpoint.
 */
import { promises as fsp } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dtype, TensorcastError, type DType } from "../../../index.js";
import { convertFile, type ConvertReport } from "../../convert/convert.js";
import { convertModelFile, type ModelConvertReport } from "../../convert/model-precision.js";
import { storesWeightsOnly } from "../../../io/onnx/precision/model.js";
import { configNote, keptWeightsNote } from "../convertNotes.js";
import { exampleCheckpoint } from "../../convert/example.js";
import { formatOption, formatStat, jobsOption, npyOptions, regexOption, sizeOption } from "../../convert/options.js";
import { ProgressBar, progressWanted } from "../../convert/progress.js";
import { Interrupted } from "../../convert/schedule.js";
import { sideFilePath } from "../../io/external-data.js";
import { checkOutputFolder, convertCheckpoint, parseShardSlice, type CheckpointConvertOptions, type CheckpointReport, type ShardSlice } from "../../convert/sharded.js";
import { isCheckpointPath, locateIndex } from "../../io/checkpoint.js";
import { parseShardSize } from "../../io/shard-split.js";
import { dequantizeCheckpoint, isQuantized } from "../../quantize/checkpoint.js";
import { checkOutput } from "../../io/file.js";
import { formatOfPath } from "../../io/reader.js";
import { formatBytes } from "../../io/tensors.js";
import { convertPytorchFile, type PytorchConvertReport } from "../../convert/pytorch.js";
import { convertPytorchFolder, isPytorchCheckpointFolder, type PytorchFolderReport } from "../../convert/pytorch-folder.js";
import { locatePytorchFolder } from "../../io/pytorch-folder.js";
import { parseCommandArgs, type OptionSpecs } from "../args.js";
import type { Command } from "../command.js";
import { formatError } from "../../../explain/format.js";
import { joinText, jsonText, tableText, writeText, type Text } from "../format.js";
import { isGgufConvert, runConvertToGguf } from "./convert-gguf.js";
import type { CliIO } from "../io.js";
import { exitCodeOf, listenForStop } from "../signals.js";
import { EXIT_OK, UsageError } from "../usage.js";
import { runHfToGguf, wantsGguf } from "../hf-gguf.js";
import { isGgufToFolder, runGgufToHf } from "./convert-gguf-hf.js";

const OPTIONS = {
  to: { type: "string", expects: "a data type such as bfloat16 or float8e4m3fn" },
  output: { type: "string", short: "o", expects: "the output file" },
  only: { type: "string", expects: "a regular expression over tensor names" },
  skip: { type: "string", expects: "a regular expression over tensor names" },
  initializers: { type: "string", expects: "a comma-separated list of tensor names" },
  "include-int": { type: "boolean" },
  saturate: { type: "boolean" },
  "no-saturate": { type: "boolean" },
  format: { type: "string", expects: "safetensors, npy, onnx or pb" },
  "output-format": { type: "string", expects: "safetensors, npy, onnx or pb" },
  "npy-dtype": { type: "string", expects: "the type of a raw |V2 or |V1 .npy array, such as bfloat16" },
  fortran: { type: "string", expects: "transpose or refuse" },
  force: { type: "boolean", short: "f" },
  quiet: { type: "boolean", short: "q" },
  json: { type: "boolean" },
  jobs: { type: "string", expects: "a number of worker threads" },
  "chunk-size": { type: "string", expects: "a size such as 64MiB" },
  "external-data": { type: "string", expects: "a file name relative to OUT's folder, such as model.onnx.data" },
  inline: { type: "boolean" },
  shard: { type: "string", expects: "K/N: slice K (from 0) of N of a sharded checkpoint's shards" },
  "max-shard-size": { type: "string", expects: "a size such as 5GB, 500MB, 2GiB or a number of bytes" },
  "split-max-size": { type: "string", expects: "a size such as 2G, 500M or 100K (1000s) or a number of bytes" },
  "split-max-tensors": { type: "string", expects: "a number of tensors" },
  "no-tensor-first-split": { type: "boolean" },
  "tokenizer-pre": { type: "string", expects: "a tokenizer.ggml.pre name llama.cpp knows, such as llama-bpe" },
  example: { type: "boolean" },
  key: { type: "string", expects: "the key of a PyTorch checkpoint's dict that holds the state dict, such as model" },
  "keep-io-types": { type: "boolean" },
  "weights-only": { type: "boolean" },
  "block-ops": { type: "string", expects: "a comma-separated list of operator names" },
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpecs;

const HELP = `Usage: tensorcast convert IN --to TYPE -o OUT [options]
       tensorcast convert DIR|DIR/model.safetensors.index.json --to TYPE -o OUTDIR [--shard K/N]
                          [--max-shard-size SIZE]
       tensorcast convert model.gguf [--to float32|bfloat16|float16] -o OUTDIR
                          [--max-shard-size SIZE]
       tensorcast convert --example [--to TYPE]

Converts the tensors of a safetensors, .npy, .onnx or .pb file to TYPE with tensorcast's Cast
(bit-exact, ONNX Cast-28 rules), tensor by tensor: memory stays bounded by a few chunks whatever
the file's size, and both cores convert. OUT is written under a hidden temporary name and renamed
only when complete, so an interrupted run leaves no partial OUT; IN is only read. Prints, for each
tensor, its old and new type, the largest absolute and relative error, and how many values
saturated or are not finite.

A Hugging Face model folder is converted into the folder OUTDIR: a sharded one (model-0000k-of-
0000n.safetensors shards and model.safetensors.index.json; give the folder or the index) shard by
shard, a one-file one (model.safetensors, no index) as its one shard. The weights files keep their
names, the folder's other files (config.json, tokenizer files) are copied, config.json's
torch_dtype / dtype set to TYPE when every float tensor has it, and an index gets an exact
total_size (a one-file folder gets none). --max-shard-size SIZE lays the weights out anew as
transformers' save_pretrained(max_shard_size=SIZE) does: tensors in order, a new shard when the
next would pass SIZE (a bigger tensor alone), model-0000k-of-0000n.safetensors and an index, or
one model.safetensors and no index when all fit; so a one-file folder is sharded and a sharded
one joined. OUTDIR is built under a hidden temporary name and renamed only when complete. --shard K/N converts only slice K of N (shard i
of the sorted list is in slice i mod N; K counts from 0, like a Kubernetes Indexed Job's
JOB_COMPLETION_INDEX) straight into OUTDIR, which N processes may share; when all N are done,
'tensorcast index OUTDIR --from DIR' writes the index. See docs/convert.md.

A PyTorch checkpoint (.bin, .pt, .pth, .ckpt; or a folder of pytorch_model.bin shards) is read
without running its pickle (only what torch.load(weights_only=True) accepts). Without --to,
'convert IN.bin -o OUT.safetensors' changes the format only: OUT holds what safetensors' save_file
stores for the state dict (every type kept, tied weights once), and a folder becomes the
safetensors folder save_pretrained writes. See docs/convert.md.

A GGUF model (llama.cpp's .gguf; a split one's parts NAME-0000K-of-0000N.gguf as one model) is
written as safetensors with its GGUF tensor names and row-major shapes: 'convert model.gguf --to
bfloat16 -o OUT.safetensors' dequantizes each block type (Q4_K, IQ2_XS, MXFP4, ...) to float32 bit
for bit as ggml does, then casts it (one rounding); F16, BF16 and F64 tensors are cast from their
own values, integer tensors kept.

A Hugging Face model folder (safetensors or PyTorch .bin shards, or a Hub cache snapshot) with
-o OUT.gguf and --to float32, float16, bfloat16, q8_0, tq1_0, tq2_0 or auto (or f32, f16, bf16)
becomes the GGUF file llama.cpp's convert_hf_to_gguf.py --outtype writes for it, byte for byte
(Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 2, Gemma 3; see docs/hf-to-gguf.md). Another GGML
type (--to q4_k, q6_k, iq4_xs, ...) gives what 'convert AUTO.gguf --to TYPE' writes from its auto
file, in one pass; llama-quantize's mixes are 'tensorcast quantize DIR --mode Q4_K_M -o OUT.gguf'.

A GGUF model with an -o that names no file format (a folder: no .safetensors or other extension,
as for a model folder's OUTDIR) becomes the Hugging Face folder transformers writes with
from_pretrained(DIR, gguf_file=..., dtype=TYPE) then save_pretrained(OUTDIR): model.safetensors
(or shards and an index past --max-shard-size, default 50GB as transformers 5's save_pretrained)
with transformers' names, shapes and {"format": "pt"}, config.json, generation_config.json and the
tokenizer files. Values: dequantized to float32 bit for bit, Llama's Q/K rows un-permuted and
Gemma's norms -1 as transformers does, then one Cast to TYPE; without --to, float32 (what
transformers loads a GGUF as). Architectures: llama (and Mistral), qwen2, qwen3, gemma2, gemma3,
phi3. 'tensorcast diff model.gguf OUTDIR' compares through the same names. See docs/convert.md.

The other way, 'convert IN --to q4_k -o OUT.gguf' writes any
file convert reads as GGUF, its float tensors quantized to a GGML type ('tensorcast convert IN
--to q4_k -o OUT.gguf --help' says more); llama-quantize's mixes are 'tensorcast quantize IN.gguf'.

By default only floating-point tensors are converted; integer, bool and complex tensors are
copied as they are. OUT's format follows its extension (.safetensors, .npy, .onnx, .pb), else IN's.

An .onnx model written back as .onnx is converted as a whole: with --to float16 or bfloat16 its
graph computes in TYPE (operators that cannot stay in float32 behind Casts); with a float8, int4 or
float4 TYPE (or --weights-only) its weights are stored in TYPE and cast back to float32 where read
(the opset is raised to 19, 21 or 23 when the Cast needs it).

Options:
  --to TYPE              the new type: bfloat16, float16, float32, float8e4m3fn, float8e5m2, ...
  -o, --output OUT       the file to write: refused if it is IN, a directory, a device or a FIFO;
                         an existing file or symbolic link is replaced only with --force
  --only REGEX           convert only tensors whose name matches
  --skip REGEX           never convert tensors whose name matches
  --include-int          convert integer and bool tensors too
  --initializers A,B     .onnx to .onnx: convert exactly these tensors and leave the graph as it is
                         (nodes reading them then see the new type)
  --keep-io-types        .onnx to .onnx, whole graph: float32 inputs and outputs stay float32 (Casts
                         at the boundary)
  --weights-only         .onnx to .onnx: store the float32 weights as TYPE with a Cast back to
                         float32 after each (the default, and the only way, for float8, int4, float4)
  --block-ops A,B        .onnx to .onnx, whole graph: operators kept in float32 (default: those the
                         onnxconverter-common float16 converter blocks; see docs/convert.md)
  --saturate             float8 / e8m0 targets: out-of-range values become +/-max (the default)
  --no-saturate          ... or NaN / Inf, as Cast with saturate=0
  --format FMT           IN's format when its name does not say it (safetensors, npy, onnx, pb, pytorch, gguf)
  --key K                a PyTorch checkpoint's state dict under the key K of its dict ({"model": {...}})
  --output-format FMT    OUT's format when its name does not say it
  --external-data FILE   .onnx OUT: write every initializer of 1024 bytes or more to FILE (a name
                         relative to OUT's folder, never outside it; offsets aligned to 64 bytes,
                         4096 for tensors of 1 MiB or more) and refer to it from OUT (onnx's
                         external data). Default: inline, unless OUT would be over protobuf's 2 GiB;
                         then OUT.data. FILE is replaced only with --force, and is never IN or
                         one of IN's own external data files
  --inline               .onnx OUT: every initializer inline, even one IN keeps in a side file
                         (refused if OUT would be over 2 GiB)
  --npy-dtype TYPE       the type of a raw '|V2' / '|V1' .npy array (how np.save writes ml_dtypes types)
  --fortran transpose    read a Fortran-order .npy array as its transpose (shape reversed)
  -f, --force            replace an existing OUT (an OUTDIR only when it holds a sharded checkpoint
                         and nothing but regular files; with --shard, the slice's existing files)
  --shard K/N            convert slice K (0 to N-1) of N of a sharded checkpoint's shards, no index
  --max-shard-size SIZE  a folder's output laid out anew with at most SIZE bytes of tensor data per
                         shard: 5GB, 500MB (powers of 10, as save_pretrained), 2GiB (powers of 2),
                         or bytes; default: the input's layout
  --split-max-size SIZE  a folder to OUT.gguf: a split model, OUT-0000k-of-0000n.gguf, at most SIZE
                         bytes of tensors per part (2G, 500M, 100K: powers of 10), as
                         convert_hf_to_gguf.py's option; with --shard K/N, only part K+1 of N
  --split-max-tensors N  ... at most N tensors per part (both limits may be given)
  --no-tensor-first-split  ... the first part holds the metadata only
  --tokenizer-pre NAME   a folder to OUT.gguf: tokenizer.ggml.pre for a BPE tokenizer whose
                         check-text hash convert_hf_to_gguf.py does not know (a known hash wins)
  -q, --quiet            print nothing but errors (no summary; no progress bar, which is drawn
                         only on a terminal, and never in CI); --json still prints the report
  --json                 print the report as JSON
  --jobs N               worker threads (default: 2 for files over 8 MiB, else none;
                         none for float32 -> bfloat16 / float16, cast in place on this thread);
                         at most: no more start than chunks, cores and ulimit -v allow
  --chunk-size SIZE      input bytes per chunk (default 4MiB)
  --example              convert the built-in example checkpoint (written to a temporary folder)
  -h, --help             show this help

Examples:
  tensorcast convert model.safetensors --to bfloat16 -o model.bf16.safetensors
  tensorcast convert model.safetensors --to float8e4m3fn --skip 'norm|embed' -o model.f8.safetensors
  tensorcast convert weights.npy --to float16 -o weights.f16.npy
  tensorcast convert model.onnx --to float16 -o model.f16.onnx
  tensorcast convert model.onnx --to float8e4m3fn -o model.w8.onnx
  tensorcast convert big.onnx --to float16 -o big.f16.onnx --external-data big.f16.onnx.data
  tensorcast convert model.onnx --to float16 --initializers w1,w2 -o model.w16.onnx
  tensorcast convert big.onnx --to float16 --initializers w1 -o out.onnx --external-data out.onnx.data
  tensorcast convert pytorch_model.bin -o model.safetensors
  tensorcast convert checkpoint.pt --key model -o model.safetensors
  tensorcast convert model-Q4_K_M.gguf --to bfloat16 -o model.bf16.safetensors
  tensorcast convert Llama-3.2-1B/ --to q8_0 -o llama-3.2-1b.q8_0.gguf
  tensorcast quantize Llama-3.2-1B/ --mode Q4_K_M -o llama-3.2-1b.Q4_K_M.gguf   (llama-quantize's mix)
  tensorcast convert Llama-3-70B/ --to bf16 -o l70.gguf --split-max-size 40G   (l70-00001-of-0000n.gguf ...)
  tensorcast convert model-Q4_K_M.gguf --to bfloat16 -o Model-bf16/     (a Hugging Face folder)
  tensorcast convert model.safetensors --to q8_0 -o model-q8_0.gguf
  tensorcast convert Llama-3-8B/ --to float8e4m3fn -o Llama-3-8B-f8/
  tensorcast convert bert-base/ --to float16 -o bert-base-f16/          (model.safetensors, no index)
  tensorcast convert Qwen-0.5B/ --to bfloat16 -o out/ --max-shard-size 200MB   (one file to shards)
  tensorcast convert Llama-3-8B/ --to bfloat16 -o out/ --shard 0/4   (and 1/4, 2/4, 3/4; then:)
  tensorcast index out/ --from Llama-3-8B/

Exit code: 0 done; 1 bad input, 2 usage error (including a bad -o), 70 internal error, 74 file
system error (a missing folder, a full disk); 130, 143, 129 stopped by SIGINT, SIGTERM, SIGHUP.
Whenever it is not 0, OUT was not written and no temporary file is left. With a side file, the
side file is renamed into place first and OUT last, so OUT never appears before its data.
`;

function shardSizeOption(value: string): number {
  try {
    return parseShardSize(value);
  } catch (e) {
    if (e instanceof TensorcastError) throw new UsageError(e.message, "convert");
    throw e;
  }
}

function requireType(value: string | undefined): DType {
  if (value === undefined) throw new UsageError("convert needs --to TYPE (for example --to bfloat16)", "convert");
  try {
    return dtype(value);
  } catch (e) {
    if (e instanceof TensorcastError) throw new UsageError(`--to: ${e.message}`, "convert");
    throw e;
  }
}

async function run(args: readonly string[], io: CliIO): Promise<number> {
  const { options: o, positionals } = parseCommandArgs("convert", args, OPTIONS);
  if (o.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  // OUT.gguf from a file: its float tensors quantized to a GGML type (convert-gguf.ts).
  if (!o.example && positionals.length === 1 && (await isGgufConvert(o.output, o["output-format"], positionals[0]))) return runConvertToGguf(args, io);
  if (o.saturate && o["no-saturate"]) throw new UsageError("--saturate and --no-saturate contradict each other", "convert");
  // A model folder to OUT.gguf: llama.cpp's convert_hf_to_gguf.py's file (src/node/cli/hf-gguf.ts).
  if (!o.example && positionals.length === 1 && wantsGguf(o.output) && (await isCheckpointPath(positionals[0]))) {
    const mine = ["to", "output", "force", "json", "quiet", "split-max-size", "split-max-tensors", "no-tensor-first-split", "shard", "tokenizer-pre"];
    const others = Object.keys(o).filter((k) => !mine.includes(k) && o[k as keyof typeof o] !== undefined);
    return runHfToGguf(positionals[0], o.output!, {
      to: o.to, force: o.force, json: o.json, quiet: o.quiet, others,
      splitMaxSize: o["split-max-size"], splitMaxTensors: o["split-max-tensors"], noTensorFirstSplit: o["no-tensor-first-split"], shard: o.shard,
      tokenizerPre: o["tokenizer-pre"],
    }, io);
  }
  // A GGUF model to a folder: the Hugging Face folder transformers would save (convert-gguf-hf.ts).
  if (!o.example && positionals.length === 1 && isGgufToFolder(positionals[0], o.format, o.output, o["output-format"])) {
    return runGgufToHf(positionals[0], o.output!, o, io, stoppable);
  }
  // A PyTorch checkpoint without --to changes format only: safetensors with the same tensors.
  if (o.to === undefined && !o.example && positionals.length === 1 && (await isPytorchInput(positionals[0], o.format))) {
    return runPytorch(positionals[0], o.output, o, io);
  }
  if (o.key !== undefined && !(positionals.length === 1 && (await isPytorchInput(positionals[0], o.format)))) {
    throw new UsageError("--key picks the state dict inside a PyTorch checkpoint (.bin, .pt, .pth); the input is not one", "convert");
  }
  const to = o.example && o.to === undefined ? dtype("float8e4m3fn") : requireType(o.to);
  const only = regexOption(o.only, "--only", "convert");
  const skip = regexOption(o.skip, "--skip", "convert");
  const inputFormat = formatOption(o.format, "--format", "convert");
  const outputFormat = formatOption(o["output-format"], "--output-format", "convert");
  const npy = npyOptions(o["npy-dtype"], o.fortran, "convert");
  const jobs = jobsOption(o.jobs, "convert");
  const chunkBytes = sizeOption(o["chunk-size"], "convert");
  const names = o.initializers?.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (names && names.length === 0) throw new UsageError("--initializers needs at least one name", "convert");

  let input: string;
  let output: string;
  let exampleDir: string | undefined;
  let wholeModel = false;
  if (o.example) {
    if (positionals.length > 0 || o.output !== undefined) {
      throw new UsageError("--example converts the built-in checkpoint; it takes no IN and no -o", "convert");
    }
    exampleDir = await mkdtemp(join(tmpdir(), "tensorcast-example-"));
    input = join(exampleDir, "example.safetensors");
    output = join(exampleDir, `example.${to.name}.safetensors`);
    await fsp.writeFile(input, exampleCheckpoint());
  } else {
    if (positionals.length !== 1) {
      throw new UsageError(
        positionals.length === 0 ? "convert needs an input file: tensorcast convert IN --to TYPE -o OUT"
          : `convert takes one input file; got ${positionals.map((p) => JSON.stringify(p)).join(" ")}`,
        "convert",
      );
    }
    input = positionals[0];
    if (o.output === undefined) throw new UsageError("convert needs an output file: -o OUT", "convert");
    output = o.output;
    // A quantized checkpoint (FP8 blocks, MXFP4 experts) comes back dequantized, so --to casts its values, not its codes and scales.
    const maxShardSize = o["max-shard-size"] === undefined ? undefined : shardSizeOption(o["max-shard-size"]);
    if (maxShardSize !== undefined && !(await isCheckpointPath(input))) {
      throw new UsageError(`--max-shard-size lays out a model folder's weights; ${input} is a file`, "convert");
    }
    if (await isQuantized(input)) {
      const r = await dequantizeCheckpoint(input, output, to, o.force === true, maxShardSize);
      if (!o.quiet) io.stdout.write(`${output}: ${r.dequantized.length} quantized tensors dequantized to ${to.name}, ${r.kept.length} copied\n`);
      return EXIT_OK;
    }
    if (await isCheckpointPath(input)) return runCheckpoint(input, output, o, io, {
      to, saturate: !o["no-saturate"], only, skip, names, includeIntegers: o["include-int"] === true,
      force: o.force === true, jobs, chunkBytes, maxShardSize, pytorch: { key: o.key },
    });
    if (o.shard !== undefined) {
      throw new UsageError(`--shard slices a sharded checkpoint (a folder or its .index.json); ${input} is a file`, "convert");
    }
    try {
      await checkOutput(output, { input, force: o.force === true });
    } catch (e) {
      // An -o that can never work (IN itself, a directory, a device, an existing file without
      // --force) is a usage error; a folder the file system refuses stays IO_ERROR.
      if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE") throw new UsageError(`-o: ${e.message}`, "convert");
      throw e;
    }
    const inFormat = inputFormat ?? formatOfPath(input);
    const outFormat = outputFormat ?? formatOfPath(output) ?? inFormat;
    if (o["external-data"] !== undefined || o.inline) {
      if (o["external-data"] !== undefined && o.inline) throw new UsageError("--external-data and --inline contradict each other", "convert");
      if (outFormat !== "onnx") {
        throw new UsageError(`${o.inline ? "--inline" : "--external-data"} is about an .onnx OUT's initializers; ${output} is ${outFormat ?? "not .onnx"}`, "convert");
      }
    }
    if (o["external-data"] !== undefined) {
      try {
        await checkOutput(sideFilePath(output, o["external-data"]), { input, force: o.force === true });
      } catch (e) {
        if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE") throw new UsageError(`--external-data: ${e.message}`, "convert");
        throw e;
      }
    }
    wholeModel = inFormat === "onnx" && outFormat === "onnx" && !names;
  }
  const modelOnly = (["keep-io-types", "weights-only", "block-ops"] as const).filter((k) => o[k] !== undefined);
  if (!wholeModel && modelOnly.length > 0) {
    throw new UsageError(`--${modelOnly[0]} applies to an .onnx model written back as .onnx without --initializers`, "convert");
  }
  if (wholeModel) {
    const filters = (["only", "skip", "include-int"] as const).filter((k) => o[k] !== undefined);
    if (filters.length > 0) throw new UsageError(`--${filters[0]} does not apply to a whole .onnx model, whose float tensors are all converted`, "convert");
    // One rule whether --weights-only is given or implied by the target (float8, int4, ...).
    const graphOnly = (["keep-io-types", "block-ops"] as const).find((k) => o[k] !== undefined);
    if (graphOnly && storesWeightsOnly(to, o["weights-only"] === true)) {
      throw new UsageError(`--${graphOnly} applies to whole-graph conversion (--to float16 or bfloat16 without --weights-only); ${o["weights-only"] ? "--weights-only" : `--to ${to.name}`} stores the weights only, and the graph, its inputs and outputs stay float32`, "convert");
    }
    return runModel(input, output, to, o, io, { jobs, chunkBytes });
  }

  const run = await stoppable(io, progressWanted(io.stderr, o.quiet === true), notWritten(input, output), (signal, onProgress) =>
    convertFile(input, output, {
      to, saturate: !o["no-saturate"], only, skip, names, includeIntegers: o["include-int"] === true,
      inputFormat, outputFormat, npy, force: o.force === true, jobs, chunkBytes, signal, onProgress,
      externalData: o.inline ? false : o["external-data"], pytorch: { key: o.key },
    }));
  if (!run.done) return run.exit;
  const report: ConvertReport = run.report;
  if (o.json) {
    writeText(io.stdout, jsonText(report));
    return EXIT_OK;
  }
  if (o.quiet) return EXIT_OK;
  writeText(io.stdout, renderConvertReport(report));
  if (exampleDir) {
    io.stdout.write(
      `\nThe example files are in ${exampleDir}. Look at them with:\n` +
        `  tensorcast inspect ${output}\n  tensorcast diff ${input} ${output}\n`,
    );
  }
  return EXIT_OK;
}

type ConvertFlags = ReturnType<typeof parseCommandArgs<typeof OPTIONS>>["options"];

/** Whether IN is a PyTorch checkpoint by its name (or --format pytorch), or a folder of pytorch_model.bin shards. */
async function isPytorchInput(input: string, format: string | undefined): Promise<boolean> {
  if (format !== undefined) return formatOption(format, "--format", "convert") === "pytorch";
  if (formatOfPath(input) === "pytorch") return true;
  return isPytorchCheckpointFolder(input);
}

/** `convert IN.bin -o OUT.safetensors` (or a folder of .bin shards to a folder of safetensors ones), without --to. */
async function runPytorch(input: string, output: string | undefined, o: ConvertFlags, io: CliIO): Promise<number> {
  if (output === undefined) throw new UsageError("convert needs an output file: -o OUT", "convert");
  for (const flag of ["only", "skip", "initializers", "include-int", "saturate", "no-saturate", "external-data", "inline", "keep-io-types", "weights-only", "block-ops", "npy-dtype", "fortran", "shard"] as const) {
    if (o[flag] !== undefined) throw new UsageError(`--${flag} needs --to TYPE; without it a PyTorch checkpoint is only written as safetensors`, "convert");
  }
  if (o["output-format"] !== undefined && formatOption(o["output-format"], "--output-format", "convert") !== "safetensors") {
    throw new UsageError("a PyTorch checkpoint is written as safetensors; --output-format can only be safetensors", "convert");
  }
  const folder = await isPytorchCheckpointFolder(input);
  const maxShardSize = o["max-shard-size"] === undefined ? undefined : shardSizeOption(o["max-shard-size"]);
  if (maxShardSize !== undefined && !folder) throw new UsageError(`--max-shard-size lays out a model folder's weights; ${input} is a file`, "convert");
  if (!folder && (o["output-format"] === undefined ? formatOfPath(output) : "safetensors") !== "safetensors") {
    throw new UsageError(`-o ${JSON.stringify(output)}: a PyTorch checkpoint is written as safetensors; name OUT.safetensors`, "convert");
  }
  try {
    if (folder) await checkOutputFolder(output, input, o.force === true);
    else await checkOutput(output, { input, force: o.force === true });
  } catch (e) {
    if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE") throw new UsageError(`-o: ${e.message}`, "convert");
    throw e;
  }
  if (maxShardSize !== undefined) {
    // Laid out anew: the folder's Checkpoint (every tensor listed in no conversion: types kept) split as save_pretrained splits.
    const laid = await stoppable(io, progressWanted(io.stderr, o.quiet === true), notWritten(input, output), (signal, onProgress) =>
      convertCheckpoint(input, output, { to: "float32", names: [], maxShardSize, force: o.force === true, pytorch: { key: o.key }, signal, onProgress }));
    if (!laid.done) return laid.exit;
    const r = laid.report;
    if (o.json) writeText(io.stdout, jsonText(r));
    else if (!o.quiet) {
      io.stdout.write(
        `${r.input} -> ${r.output}  (PyTorch -> safetensors, types kept)\n` +
          `${r.shards.reduce((n, s) => n + s.tensors.length, 0)} tensors in ${r.files.join(", ")}; ` +
          (r.indexName !== undefined ? `index ${r.indexName}, total_size ${r.totalSize}` : "no index (one file)") +
          (r.copied.length > 0 ? `; copied: ${r.copied.join(", ")}` : "") + "\n",
      );
    }
    return EXIT_OK;
  }
  const run = await stoppable<PytorchConvertReport | PytorchFolderReport>(io, progressWanted(io.stderr, o.quiet === true), notWritten(input, output), (signal, onProgress) =>
    folder ? convertPytorchFolder(input, output, { force: o.force === true, key: o.key, signal, onProgress })
      : convertPytorchFile(input, output, { force: o.force === true, key: o.key, chunkBytes: sizeOption(o["chunk-size"], "convert"), signal, onProgress }));
  if (!run.done) return run.exit;
  const reports = "shards" in run.report ? run.report.shards : [run.report];
  if (o.json) writeText(io.stdout, jsonText(run.report));
  else if (!o.quiet) {
    for (const r of reports) {
      const tied = Object.entries(r.tied).map(([kept, names]) => `  ${names.join(", ")} (tied to ${kept}: the same storage, kept once)\n`).join("");
      io.stdout.write(
        `${r.input} -> ${r.output}  (PyTorch ${r.container} -> safetensors, types kept)\n` +
          `${r.tensors.length} tensors written; ${formatBytes(r.bytesIn)} -> ${formatBytes(r.bytesOut)}\n` +
          (tied ? `left out, tied:\n${tied}` : ""),
      );
    }
    if ("shards" in run.report) {
      const f = run.report;
      const index = f.indexName !== undefined ? `index ${f.indexName}, total_size ${f.totalSize}` : "weights: model.safetensors, no index (one file)";
      io.stdout.write(`${f.output}: ${index}${f.copied.length > 0 ? `; copied: ${f.copied.join(", ")}` : ""}\n`);
    }
  }
  return EXIT_OK;
}

type Stoppable<R> = { done: true; report: R } | { done: false; exit: number };

/**
 * Runs a conversion that SIGINT, SIGTERM and SIGHUP stop: `work` gets the abort signal and, with
 * `bar`, a progress callback drawing a bar on stderr. A stop prints `interrupted(signal)` and
 * gives the signal's exit code; other errors are thrown as they are.
 */
async function stoppable<R>(
  io: CliIO, bar: boolean, interrupted: (signal: string) => string,
  work: (signal: AbortSignal, onProgress: ((done: number, total: number) => void) | undefined) => Promise<R>,
): Promise<Stoppable<R>> {
  const stop = listenForStop();
  let progress: ProgressBar | undefined;
  try {
    const onProgress = bar
      ? (done: number, total: number): void => {
          progress ??= new ProgressBar(io.stderr, total, "converting");
          progress.update(done);
        }
      : undefined;
    return { done: true, report: await work(stop.signal, onProgress) };
  } catch (e) {
    if (!(e instanceof Interrupted)) throw e;
    progress?.finish();
    progress = undefined;
    const signal = stop.received() ?? "SIGINT";
    io.stderr.write(interrupted(signal));
    return { done: false, exit: exitCodeOf(signal) };
  } finally {
    progress?.finish();
    stop.dispose();
  }
}

/** What a stopped conversion of one file prints. */
function notWritten(input: string, output: string): (signal: string) => string {
  return (signal) => `interrupted by ${signal}: ${output} was not written (${input} is unchanged)\n`;
}

/** `convert DIR -o OUTDIR [--shard K/N]`: a sharded checkpoint. */
async function runCheckpoint(input: string, output: string, o: ConvertFlags, io: CliIO, opts: CheckpointConvertOptions): Promise<number> {
  for (const flag of ["format", "npy-dtype", "fortran", "external-data", "inline", "keep-io-types", "weights-only", "block-ops"] as const) {
    if (o[flag] !== undefined) throw new UsageError(`--${flag} does not apply to a sharded checkpoint, whose shards are safetensors`, "convert");
  }
  if (o["output-format"] !== undefined && formatOption(o["output-format"], "--output-format", "convert") !== "safetensors") {
    throw new UsageError("a sharded checkpoint is written as safetensors shards; --output-format can only be safetensors", "convert");
  }
  if (formatOfPath(output) !== undefined) {
    throw new UsageError(`-o ${JSON.stringify(output)} names a file, but a model folder is written as a folder: give a folder name`, "convert");
  }
  let shard: ShardSlice | undefined;
  try {
    shard = o.shard === undefined ? undefined : parseShardSlice(o.shard);
    const located = (await isPytorchCheckpointFolder(input)) ? await locatePytorchFolder(input) : await locateIndex(input);
    if (shard && opts.maxShardSize !== undefined) throw new UsageError("--shard K/N and --max-shard-size contradict each other: slices convert the input's shards into files of the same names", "convert");
    if (shard && located.weights !== undefined) throw new UsageError(`--shard K/N slices a sharded checkpoint's shards; ${input} holds one weights file (${located.weights}) and no index`, "convert");
    // An -o that can never work is a usage error, found before any shard is read.
    if (!shard) await checkOutputFolder(output, located.folder, o.force === true);
  } catch (e) {
    if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE") throw new UsageError(e.message.startsWith("--shard") ? e.message : `-o: ${e.message}`, "convert");
    throw e;
  }
  const interrupted = shard
    ? (signal: string) => `interrupted by ${signal}: the shard being converted was not written; the slice's finished shards stay in ${output} (${input} is unchanged)\n`
    : notWritten(input, output);
  let run: Stoppable<CheckpointReport>;
  try {
    run = await stoppable(io, progressWanted(io.stderr, o.quiet === true), interrupted, (signal, onProgress) =>
      convertCheckpoint(input, output, { ...opts, shard, signal, onProgress }));
  } catch (e) {
    // An existing output file of the slice (without --force) is a bad -o, as for one file.
    if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE" && e.message.startsWith(output)) throw new UsageError(`-o: ${e.message}`, "convert");
    throw e;
  }
  if (!run.done) return run.exit;
  const report = run.report;
  if (o.json) writeText(io.stdout, jsonText(report));
  else if (!o.quiet) writeText(io.stdout, renderCheckpointReport(report));
  return EXIT_OK;
}

/** What `convert` prints for a sharded checkpoint: each shard's table, then the folder's summary. */
export function renderCheckpointReport(r: CheckpointReport): Text {
  const tensors = r.shards.reduce((n, s) => n + s.tensors.length, 0);
  const converted = r.shards.reduce((n, s) => n + s.tensors.filter((t) => t.converted).length, 0);
  const files = `${r.files.length} ${r.indexName === undefined ? "file" : r.files.length === 1 ? "shard" : "shards"}`;
  const what = r.slice ? `slice ${r.slice.index}/${r.slice.count}: ${files}` : files;
  const tail = [
    `\n${r.input} -> ${r.output}  (${what}, to ${r.to}, saturate=${r.saturate})\n`,
    `${converted} of ${tensors} tensors converted; ${formatBytes(r.bytesIn)} -> ${formatBytes(r.bytesOut)} in ${formatStat(Number(r.seconds.toFixed(2)))} s\n`,
    r.copied.length > 0 ? `copied: ${r.copied.join(", ")}\n` : "",
    configNote(r.config, r.to),
    r.skipped.length > 0 ? `left out: ${r.skipped.map((s) => `${s.name} (${s.reason})`).join(", ")}\n` : "",
    r.slice
      ? `no index written: when every slice is done, run tensorcast index ${r.output} --from ${r.input}\n`
      : r.indexName !== undefined
      ? `index: ${r.indexName}, total_size ${r.totalSize} (the tensors' data bytes)\n`
      : `weights: ${r.files[0]}, no index (one file)\n`,
  ];
  return joinText(...r.shards.flatMap((s, i) => (i === 0 ? [renderConvertReport(s)] : ["\n", renderConvertReport(s)])), ...tail);
}

/** An .onnx model converted as a whole (src/node/convert/model-precision.ts). */
async function runModel(input: string, output: string, to: DType, o: ConvertFlags, io: CliIO, work: { jobs?: number; chunkBytes?: number }): Promise<number> {
  const blockOps = o["block-ops"]?.split(",").map((s) => s.trim()).filter((s) => s !== "");
  const run = await stoppable(io, progressWanted(io.stderr, o.quiet === true), notWritten(input, output), (signal, onProgress) =>
    convertModelFile(input, output, {
      to, saturate: !o["no-saturate"], keepIoTypes: o["keep-io-types"] === true, weightsOnly: o["weights-only"] === true,
      blockOps, force: o.force === true, signal, onProgress, ...work, externalData: o.inline ? false : o["external-data"],
    }));
  if (!run.done) return run.exit;
  const report: ModelConvertReport = run.report;
  if (o.json) {
    writeText(io.stdout, jsonText(report));
    return EXIT_OK;
  }
  if (o.quiet) return EXIT_OK;
  writeText(io.stdout, renderConvertReport(report));
  const opset = report.opsetAfter !== report.opsetBefore ? `; opset ${report.opsetBefore} -> ${report.opsetAfter}` : "";
  const kept = report.kept.map((k) => `  ${k.opType} ${JSON.stringify(k.name)}${k.graph ? ` (graph ${JSON.stringify(k.graph)})` : ""}: ${k.reason}\n`).join("");
  io.stdout.write(
    `${report.mode === "graph" ? `graph converted to ${report.to}` : `weights stored as ${report.to}`}: ` +
      `${report.castsInserted} Cast nodes inserted, ${report.kept.length} nodes kept in float32${opset}\n${kept}${keptWeightsNote(report)}`,
  );
  return EXIT_OK;
}

/** The per-tensor summary `convert` prints, a row at a time. */
export function renderConvertReport(r: ConvertReport): Text {
  const row = (t: ConvertReport["tensors"][number]): string[] => {
    const s = t.stats;
    return [
      t.name, `[${t.shape.join(", ")}]`, t.from, t.converted ? t.to : `kept (${t.reason})`,
      s ? formatError(s.maxAbsError) : "", s ? formatError(s.maxRelError) : "",
      s ? String(s.saturated) : "", s ? String(s.nonFinite) : "",
    ];
  };
  const table = tableText(
    [
      { header: "tensor" }, { header: "shape" }, { header: "from" }, { header: "to" },
      { header: "max abs err", align: "right" }, { header: "max rel err", align: "right" },
      { header: "saturated", align: "right" }, { header: "non-finite", align: "right" },
    ],
    r.tensors.length, (i) => row(r.tensors[i]),
  );
  const converted = r.tensors.filter((t) => t.converted).length;
  const rate = r.seconds > 0 ? r.bytesIn / r.seconds : 0;
  const x = r.externalData;
  const side = x
    ? `${x.tensors} ${x.tensors === 1 ? "initializer's" : "initializers'"} data (${formatBytes(x.bytes)}) written to the side file ${x.path}, which ${r.output} names as ${JSON.stringify(x.location)}` +
      `${x.automatic ? " (chosen because the model would be over protobuf's 2 GiB inline; --inline refuses instead)" : ""}\n`
    : "";
  return joinText(
    `${r.input} -> ${r.output}  (${r.inputFormat} -> ${r.outputFormat}, to ${r.to}, saturate=${r.saturate})\n`,
    table,
    `\n${converted} of ${r.tensors.length} tensors converted; ${formatBytes(r.bytesIn)} -> ${formatBytes(r.bytesOut)} ` +
    `in ${formatStat(Number(r.seconds.toFixed(2)))} s (${formatBytes(rate)}/s, ${r.workers === 0 ? "1 thread" : `${r.workers} worker thread${r.workers === 1 ? "" : "s"}`})\n` +
    side,
  );
}

export const convertCommand: Command = {
  name: "convert",
  summary: "convert a safetensors / .npy / .onnx / .pb file's tensors to another type, streaming",
  help: HELP,
  run,
};

/**
 * tensorcast/node: the parts of tensorcast that need Node: the command line, which can also be
 * driven from code (`await main(["cast", "--to", "float8e4m3fn", "1.5"], io)`), and the conformance runner.
 */
export { main, COMMANDS } from "./cli/main.js";
export type { CliIO, Output } from "./cli/io.js";
export type { Command } from "./cli/command.js";
export { UsageError, EXIT_OK, EXIT_BAD_INPUT, EXIT_USAGE, EXIT_INTERNAL, EXIT_IO } from "./cli/usage.js";
export { castValues, type CastFlag, type CastReport, type CastRequest, type CastRow } from "./cli/castReport.js";
export { renderCastReport } from "./cli/commands/cast.js";
export { typeRows, renderTypes, type TypeRow } from "./cli/commands/types.js";
export { exampleReports } from "./cli/commands/example.js";
export { packageVersion } from "./cli/version.js";
export { compareTensors, type Difference } from "./conformance/compare.js";
export { findCases, runCase, totals, type CaseResult, type Outcome } from "./conformance/suite.js";
export { EXPECTED_DIFFERENCES, type ExpectedDifference } from "./conformance/expected.js";
export { convertFile, selectTensors, type ConvertOptions, type ConvertReport, type TensorReport } from "./convert/convert.js";
export { convertModelFile, type ModelConvertOptions, type ModelConvertReport } from "./convert/model-precision.js";
export {
  quantizeModelFile, quantizeModelFolder, type QuantizeFileOptions, type QuantizeFileReport, type QuantizeFolderOptions,
} from "./quantize/model-file.js";
export {
  convertCheckpoint, indexCheckpoint, parseShardSlice, sliceShards,
  type CheckpointConvertOptions, type CheckpointReport, type IndexOptions, type IndexReport, type ShardSlice,
} from "./convert/sharded.js";
export { readCheckpoint, openCheckpoint, openTensorSource, encodeIndex, type Checkpoint, type ShardTensor } from "./io/checkpoint.js";
export { parseShardSize } from "./io/shard-split.js";
export { inspectFile, type InspectOptions, type InspectReport, type TensorSummary } from "./convert/inspect.js";
export { diffFiles, type DiffOptions, type DiffReport, type TensorDiff } from "./convert/diff.js";
export type { ConvertStats, ValueStats, DiffStats } from "./convert/kernel.js";
export { exampleCheckpoint, exampleTensors } from "./convert/example.js";
export { openTensorFile, formatOfPath, type OpenOptions } from "./io/reader.js";
export { openGguf, readGgufFile, type GgufFileTensor, type GgufTensorFile, type GgmlStorage } from "./io/gguf.js";
// The core's GGUF reader itself (readGguf, ggufModel, ggufRecords, ..., over any ByteSource) is
// tensorcast/gguf's; this entry adds what takes a path.
export type { FileFormat, FileTensor, TensorFile, TensorInfo } from "./io/tensors.js";
export { encodeSafetensorsHeader, parseSafetensorsHeader, SAFETENSORS_DTYPES } from "./io/safetensors.js";
export { encodeNpyHeader, parseNpyHeader, type NpyOptions } from "./io/npy.js";
export { castAsync, castIntoAsync, sharedZeros, closeCastAsyncPool, CAST_ASYNC_MIN_ELEMENTS, type CastAsyncOptions } from "./cast-async.js";
export { useQuantizeThread, quantizeThreadChunks } from "./quant-helper.js";

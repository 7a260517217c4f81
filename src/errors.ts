/**
 * Stable error codes. A code never changes meaning once released, so callers can branch on it;
 * the message is for people and may be reworded.
 */
export type ErrorCode =
  /** A data-type name, alias or ONNX number that tensorcast does not know. */
  | "UNKNOWN_DTYPE"
  /** A known data type that this operator, opset version or format does not accept. */
  | "UNSUPPORTED_TYPE"
  /** An attribute or option that is unknown, malformed, or not part of the requested opset version. */
  | "INVALID_ATTRIBUTE"
  /** An opset version outside the range an operator exists in. */
  | "INVALID_OPSET"
  /** A shape that is malformed: negative or fractional dimensions, too large. */
  | "INVALID_SHAPE"
  /** A shape that does not agree with the data it describes or with another shape. */
  | "SHAPE_MISMATCH"
  /** A value that cannot be stored in the requested type without changing it. */
  | "INVALID_VALUE"
  /** Two types that ConvertPromoteTypes refuses to promote (OpenVINO's four error sentences). */
  | "PROMOTION_ERROR"
  /** A string element that does not parse as the requested type. */
  | "PARSE_ERROR"
  /** Bytes that do not form a valid file, message or tensor. */
  | "INVALID_DATA"
  /** An output storage whose bytes overlap the input's (castInto). */
  | "ALIASED_OUTPUT"
  /** An arena (createArena) without room for the tensor asked of it; the message gives the bytes needed and free. */
  | "ARENA_FULL"
  /** reset() of a shared arena (createArena with `shared: true`): views of shared memory cannot be detached, so it is reclaimed by garbage collection only. */
  | "ARENA_SHARED"
  /** The platform lacks what the call needs: castAsync's shared memory in a page that is not cross-origin isolated, toFloat16Array where there is no Float16Array. */
  | "UNSUPPORTED_PLATFORM"
  /** A castAsync worker did not start (its script did not load) or stopped while it had work. */
  | "WORKER_FAILED"
  /** Something the spec defines that tensorcast does not do yet. */
  | "NOT_IMPLEMENTED"
  /**
   * An output path (OUT, its side file, a shard or index written) that is one of the input's own
   * files: the input, its external data, a shard or the index of its folder, by name or as the
   * same file (a hard or symbolic link). Refused before anything is written, even with --force.
   */
  | "OUTPUT_IS_INPUT"
  /**
   * The operating system refused a file operation: no such file or folder, permission denied, no
   * space left on the device, a read-only file system. The message names the file and the reason.
   */
  | "IO_ERROR"
  /**
   * A check tensorcast makes on its own work failed, such as an output file that does not read back
   * as it was planned. A bug in tensorcast, not in the input: please report it.
   */
  | "INTERNAL";

/**
 * The one error class tensorcast throws for bad input. `code` is stable; `message` names what was
 * given and what would have been accepted.
 */
export class TensorcastError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = "TensorcastError";
    this.code = code;
  }
}

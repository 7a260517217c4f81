/**
 * ONNX external data: an initializer whose data_location is EXTERNAL keeps its bytes in a side
 * file, described by TensorProto.external_data's key-value pairs (onnx.proto):
 *   location  (required) a path relative to the model's folder
 *   offset    (optional) where the bytes start, a decimal integer as a string (default 0)
 *   length    (optional) how many bytes, likewise (default: to the end of the file)
 *   checksum  (optional) the SHA-1 digest of the whole file named by location
 *
 * Where the specification leaves room, a path that could reach outside the model's folder is
 * refused rather than cleaned up (onnx's Python loader strips leading "/" and "."; onnxruntime
 * refuses paths that escape): an absolute path, a ".." component, a NUL, or a symbolic link whose
 * target lies outside the folder. A side file with more than one hard link is refused too, as onnx
 * 1.23 refuses it ("multiple hard links, indicating a potential hardlink attack"): a hard link
 * inside the folder can be a second name of any file its creator could name, such as one only the
 * person converting can read, and no path check can tell. Unknown and repeated keys are refused,
 * as onnxruntime does.
 * A checksum, which neither onnx nor onnxruntime checks, is checked: a file that does not match
 * is refused before any of its bytes are used.
 */
import { createHash } from "node:crypto";
import { realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { TensorcastError } from "../../index.js";
import { WireReader } from "../../io/onnx/wire.js";
import { fileError, RandomAccessFile } from "./file.js";

/** Where an initializer's bytes are, as its external_data says. */
export interface ExternalRef {
  readonly location: string;
  readonly offset: number;
  /** Undefined: to the end of the file. */
  readonly length: number | undefined;
  /** Lower-case hex, when given. */
  readonly checksum: string | undefined;
}

const KEYS = ["location", "offset", "length", "checksum"] as const;

/**
 * The ExternalRef that a TensorProto's external_data entries (each a serialized
 * StringStringEntryProto: key = 1, value = 2) describe.
 * @throws TensorcastError INVALID_DATA naming the file, the tensor and the entry.
 */
export function parseExternalData(entries: readonly Uint8Array[], path: string, tensor: string): ExternalRef {
  const found = new Map<string, string>();
  for (const entry of entries) {
    const r = new WireReader(entry, "StringStringEntryProto");
    let key = "";
    let value = "";
    for (let f = r.next(); f !== 0; f = r.next()) {
      if (f === 1 && r.wireType === 2) key = r.string("key");
      else if (f === 2 && r.wireType === 2) value = r.string("value");
      else r.skip();
    }
    if (!(KEYS as readonly string[]).includes(key)) {
      throw fileError("INVALID_DATA", path, `external_data has the key ${JSON.stringify(key.slice(0, 64))}; the keys are ${KEYS.join(", ")}`, tensor);
    }
    if (found.has(key)) throw fileError("INVALID_DATA", path, `external_data gives ${key} twice`, tensor);
    found.set(key, value);
  }
  const location = found.get("location");
  if (location === undefined || location === "") throw fileError("INVALID_DATA", path, "its data is external (data_location EXTERNAL) but external_data has no location", tensor);
  const integer = (key: "offset" | "length"): number | undefined => {
    const text = found.get(key);
    if (text === undefined) return undefined;
    const n = /^[0-9]{1,16}$/.test(text) ? Number(text) : NaN;
    if (!Number.isSafeInteger(n)) throw fileError("INVALID_DATA", path, `external_data's ${key} is ${JSON.stringify(text.slice(0, 64))}, not a decimal byte count`, tensor);
    return n;
  };
  const checksum = found.get("checksum");
  if (checksum !== undefined && !/^[0-9a-fA-F]{40}$/.test(checksum)) {
    throw fileError("INVALID_DATA", path, `external_data's checksum is ${JSON.stringify(checksum.slice(0, 64))}, not a SHA-1 digest (40 hex digits)`, tensor);
  }
  return { location, offset: integer("offset") ?? 0, length: integer("length"), checksum: checksum?.toLowerCase() };
}

/**
 * The side files of one model, each opened once and checked against its checksum once. `close`
 * closes them all.
 */
export class ExternalFiles {
  private readonly folder: string;
  private readonly opened = new Map<string, Promise<RandomAccessFile>>();
  private readonly checked = new Map<string, Promise<void>>();

  /**
   * `redirect` maps a location to the file to open instead: the converter's read-back opens a
   * model whose side file is still under its temporary name.
   */
  constructor(readonly modelPath: string, private readonly redirect?: ReadonlyMap<string, string>) {
    this.folder = dirname(modelPath);
  }

  /**
   * The bytes range [start, end) of the file that `ref` names, checked: within the model's folder,
   * a regular file, long enough, `byteLength` long when `length` is given, and matching its checksum.
   */
  async locate(ref: ExternalRef, byteLength: number, tensor: string): Promise<{ file: RandomAccessFile; start: number }> {
    const file = await this.open(ref.location, tensor);
    const length = ref.length ?? file.size - ref.offset;
    if (ref.offset > file.size || ref.offset + length > file.size) {
      throw fileError(
        "INVALID_DATA", this.modelPath,
        `its external data is bytes [${ref.offset}, ${ref.offset + length}) of ${ref.location}, which has ${file.size} bytes`, tensor,
      );
    }
    if (length !== byteLength) {
      throw fileError("INVALID_DATA", this.modelPath, `its external data in ${ref.location} is ${length} bytes, but its type and dims need ${byteLength}`, tensor);
    }
    if (ref.checksum !== undefined) await this.check(file, ref.location, ref.checksum, tensor);
    return { file, start: ref.offset };
  }

  /**
   * The bytes of every side file opened: scanModelFile locates each external initializer when the
   * model is opened, so these are all the files the model's data is read from.
   */
  async size(): Promise<number> {
    let bytes = 0;
    for (const f of await Promise.allSettled(this.opened.values())) if (f.status === "fulfilled") bytes += f.value.size;
    return bytes;
  }

  async close(): Promise<void> {
    const files = await Promise.allSettled(this.opened.values());
    this.opened.clear();
    for (const f of files) if (f.status === "fulfilled") await f.value.close();
  }

  private open(location: string, tensor: string): Promise<RandomAccessFile> {
    let file = this.opened.get(location);
    if (!file) {
      const instead = this.redirect?.get(location);
      // A redirect is the converter's own temporary side file, created with one link.
      file = instead !== undefined ? RandomAccessFile.open(instead) : this.resolve(location, tensor).then((path) => this.openSingleLink(path, location, tensor));
      this.opened.set(location, file);
    }
    return file;
  }

  private async resolve(location: string, tensor: string): Promise<string> {
    const refuse = (why: string): TensorcastError =>
      fileError("INVALID_DATA", this.modelPath, `its external data location ${JSON.stringify(location.slice(0, 200))} ${why}; it must name a file inside the model's folder`, tensor);
    if (location.includes("\0")) throw refuse("contains a NUL character");
    if (isAbsolute(location) || location.startsWith("\\")) throw refuse("is an absolute path");
    if (location.split(/[\\/]/).includes("..")) throw refuse("has a \"..\" component");
    const path = join(this.folder, location);
    let real: string;
    let folder: string;
    try {
      [real, folder] = await Promise.all([realpath(path), realpath(this.folder)]);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      throw fileError("IO_ERROR", this.modelPath, `cannot open its external data file ${path} (${code ?? String(e)})`, tensor);
    }
    const inside = relative(folder, real);
    if (inside === "" || inside.startsWith(`..${sep}`) || inside === ".." || isAbsolute(inside)) throw refuse(`leads to ${real} through a symbolic link`);
    return path;
  }

  /** Opens the side file and refuses it when it has more than one hard link (counted on the file opened, not on a path looked at before). */
  private async openSingleLink(path: string, location: string, tensor: string): Promise<RandomAccessFile> {
    const file = await RandomAccessFile.open(path);
    if (file.links > 1) {
      await file.close();
      throw fileError(
        "INVALID_DATA", this.modelPath,
        `its external data file ${JSON.stringify(location.slice(0, 200))} has ${file.links} hard links; a side file with more than one may be ` +
          "a second name of a file outside the model's folder, so it is refused, as onnx refuses it (copy the file to give it a single link)",
        tensor,
      );
    }
    return file;
  }

  private check(file: RandomAccessFile, location: string, checksum: string, tensor: string): Promise<void> {
    const key = `${location}\0${checksum}`;
    let done = this.checked.get(key);
    if (!done) {
      done = sha1(file).then((digest) => {
        if (digest !== checksum) {
          throw fileError("INVALID_DATA", this.modelPath, `its external data file ${location} has the SHA-1 digest ${digest}, not the checksum ${checksum} that external_data gives`, tensor);
        }
      });
      this.checked.set(key, done);
    }
    return done;
  }
}

/**
 * The path of the side file that an output model at `output` names by `location`, which must be
 * a relative path inside the output's folder (the rules a reader applies, above) and must not be
 * the model itself.
 * @throws TensorcastError INVALID_ATTRIBUTE naming what was given and what is allowed.
 * @example sideFilePath("out/model.onnx", "model.onnx.data") // "out/model.onnx.data"
 */
export function sideFilePath(output: string, location: string): string {
  const refuse = (why: string): TensorcastError =>
    new TensorcastError("INVALID_ATTRIBUTE", `--external-data ${JSON.stringify(location.slice(0, 200))} ${why}; name a file relative to the output's folder, such as ${JSON.stringify(`${basename(output)}.data`)}`);
  if (location === "") throw refuse("is empty");
  if (location.includes("\0")) throw refuse("contains a NUL character");
  if (isAbsolute(location) || location.startsWith("\\")) throw refuse("is an absolute path");
  const parts = location.split(/[\\/]/);
  if (parts.includes("..")) throw refuse("has a \"..\" component");
  if (location.endsWith("/") || location.endsWith("\\") || parts[parts.length - 1] === ".") throw refuse("names a directory");
  const path = join(dirname(output), location);
  if (resolve(path) === resolve(output)) throw refuse("is the output model itself");
  return path;
}

/** The SHA-1 digest of a whole file, read in 1 MiB pieces. */
async function sha1(file: RandomAccessFile): Promise<string> {
  const hash = createHash("sha1");
  const piece = new Uint8Array(Math.min(1 << 20, Math.max(1, file.size)));
  for (let at = 0; at < file.size; at += piece.length) {
    const n = Math.min(piece.length, file.size - at);
    hash.update(await file.read(at, n, piece.subarray(0, n)));
  }
  return hash.digest("hex");
}

/**
 * Files on disk, read and written in bounded pieces: positional reads that fail loudly when a file
 * is shorter than its header says, and an output file that only appears under its final name once
 * it is complete (written under a temporary name, flushed, then renamed).
 *
 * Every error is a TensorcastError whose message starts with the file's path; what the operating
 * system refused (a missing folder, a full disk) is IO_ERROR, never INVALID_DATA.
 */
import { createHash, randomBytes } from "node:crypto";
import { constants, promises as fsp, type Stats } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { TensorcastError, type ErrorCode } from "../../index.js";
import type { InputFiles } from "./input-files.js";
import { forgetAtExit, removeAtExit } from "./exit-cleanup.js";

/** A TensorcastError about `file` (and, when given, one of its tensors). */
export function fileError(code: ErrorCode, file: string, message: string, tensor?: string): TensorcastError {
  return new TensorcastError(code, `${file}: ${tensor === undefined ? "" : `tensor ${JSON.stringify(tensor)}: `}${message}`);
}

/** What a system error means, in words, for the file it happened to. */
export function systemError(file: string, doing: string, e: unknown): TensorcastError {
  const err = e as NodeJS.ErrnoException;
  const why =
    err.code === "ENOENT" ? "no such file or directory"
    : err.code === "EACCES" || err.code === "EPERM" ? "permission denied"
    : err.code === "EISDIR" ? "is a directory, not a file"
    : err.code === "ENOTDIR" ? "a part of its path is not a directory"
    : err.code === "ENOSPC" ? "no space left on the device (ENOSPC)"
    : err.code === "EDQUOT" ? "the disk quota is exhausted (EDQUOT)"
    : err.code === "EROFS" ? "the file system is read-only (EROFS)"
    : err.code === "EIO" ? "the device reported an input/output error (EIO)"
    : err.message;
  return fileError("IO_ERROR", file, `cannot ${doing}: ${why}`);
}

/** "a FIFO (named pipe)", "a character device", ...: what a non-regular file is, for messages. */
export function kindOf(stat: Stats): string {
  return stat.isDirectory() ? "a directory"
    : stat.isSymbolicLink() ? "a symbolic link"
    : stat.isFIFO() ? "a FIFO (named pipe)"
    : stat.isCharacterDevice() ? "a character device"
    : stat.isBlockDevice() ? "a block device"
    : stat.isSocket() ? "a socket"
    : "not a regular file";
}

/** lstat, or undefined when nothing is there. */
export async function lstatOrNothing(path: string): Promise<Stats | undefined> {
  try {
    return await fsp.lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw systemError(path, "look at it", e);
  }
}

/**
 * Refuses an output path before anything is read, so a bad `-o` costs nothing: an empty path or one
 * ending in a slash, the input itself (even through a link), a directory, a device, FIFO or socket
 * (never replaced, even with `force`: writing a regular file over /dev/null would break the system),
 * an existing file or symbolic link without `force` (with it, the link itself is replaced and its
 * target left alone), and a folder that is missing or not writable.
 * @throws TensorcastError OUTPUT_IS_INPUT for the input; INVALID_ATTRIBUTE for what else the caller
 *         asked wrongly; IO_ERROR for what the file system refuses (a missing folder, permission
 *         denied, a read-only file system).
 */
export async function checkOutput(output: string, opts: { input?: string; force?: boolean }): Promise<void> {
  if (output === "") throw new TensorcastError("INVALID_ATTRIBUTE", "the output path is empty; name the file to write");
  if (output.endsWith("/")) {
    throw fileError("INVALID_ATTRIBUTE", output, "ends with a slash, so it names a directory; name the file to write");
  }
  if (opts.input !== undefined && (await sameFile(opts.input, output))) {
    throw fileError("OUTPUT_IS_INPUT", output, "is the input file; tensorcast never overwrites its input");
  }
  const stat = await lstatOrNothing(output);
  if (stat?.isDirectory()) throw fileError("INVALID_ATTRIBUTE", output, "is a directory; name the file to write (inside it or elsewhere)");
  if (stat && !stat.isFile() && !stat.isSymbolicLink()) {
    throw fileError(
      "INVALID_ATTRIBUTE", output,
      `is ${kindOf(stat)}; tensorcast writes only regular files and never replaces anything else, even with --force`,
    );
  }
  if (stat && !opts.force) {
    throw fileError("INVALID_ATTRIBUTE", output, `already exists${stat.isSymbolicLink() ? " (a symbolic link)" : ""}; pass --force to replace it`);
  }
  const folder = dirname(output);
  let folderStat: Stats;
  try {
    folderStat = await fsp.stat(folder);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") throw fileError("IO_ERROR", output, `cannot write it: its directory ${folder} does not exist`);
    throw systemError(output, `write in its directory ${folder}`, e);
  }
  if (!folderStat.isDirectory()) throw fileError("IO_ERROR", output, `cannot write it: ${folder} is ${kindOf(folderStat)}, not a directory`);
  try {
    await fsp.access(folder, constants.W_OK | constants.X_OK);
  } catch (e) {
    throw systemError(output, `write in its directory ${folder}`, e);
  }
}

function sha1Of(bytes: Uint8Array): string {
  return createHash("sha1").update(bytes).digest("hex");
}

/** Writes up to this long are gathered into one (see AtomicOutput.write). */
const SMALL_WRITE = 16 * 1024;
const GATHER = 256 * 1024;
/** Reads up to this long are served from a read-ahead buffer (see RandomAccessFile.read). */
const SMALL_READ = 4 * 1024;
const READ_AHEAD = 64 * 1024;

/** An open file read at explicit positions; its size is taken once, when it is opened. */
export class RandomAccessFile {
  readonly path: string;
  readonly size: number;
  /** Its hard links (st_nlink) when it was opened: ONNX external data is refused above 1 (external-data.ts). */
  readonly links: number;
  private readonly handle: fsp.FileHandle;
  /** The last read-ahead: bytes [aheadStart, aheadStart + ahead.length) of the file. */
  private ahead: Uint8Array = new Uint8Array(0);
  private aheadStart = 0;

  private constructor(path: string, handle: fsp.FileHandle, size: number, links: number) {
    this.path = path;
    this.handle = handle;
    this.size = size;
    this.links = links;
  }

  /** @throws TensorcastError IO_ERROR when the file cannot be opened; INVALID_DATA when it is not a regular file. */
  static async open(path: string): Promise<RandomAccessFile> {
    let handle: fsp.FileHandle;
    try {
      // O_NONBLOCK: opening a FIFO for reading would otherwise wait, forever, for a writer (and
      // no signal can interrupt it); it now opens at once and is refused below. Regular files
      // ignore the flag.
      handle = await fsp.open(path, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (e) {
      throw systemError(path, "open it", e);
    }
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) throw fileError("INVALID_DATA", path, "is not a regular file");
      return new RandomAccessFile(path, handle, stat.size, stat.nlink);
    } catch (e) {
      await handle.close();
      throw e instanceof TensorcastError ? e : systemError(path, "read it", e);
    }
  }

  /**
   * Reads exactly `length` bytes at `position` (into `into` when given, which must be that long).
   * The result is the caller's own: never a view of a buffer a later read reuses.
   *
   * Small reads come from a 64 KiB read-ahead: a file of many small tensors (200,000 one-byte
   * initializers) is otherwise one system call per tensor, about 20 us each, which was most of
   * the time `inspect` spent on such a file.
   * @throws TensorcastError INVALID_DATA naming the range when the file ends first.
   */
  async read(position: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    if (position + length > this.size) {
      throw fileError(
        "INVALID_DATA", this.path,
        `is truncated: bytes [${position}, ${position + length}) are needed but the file has ${this.size} bytes`,
      );
    }
    if (length > SMALL_READ) return this.readThrough(position, length, into ?? new Uint8Array(length));
    if (position < this.aheadStart || position + length > this.aheadStart + this.ahead.length) {
      const n = Math.min(READ_AHEAD, this.size - position);
      // A fresh buffer each time, so a read still copying out of the previous one is unaffected.
      this.ahead = await this.readThrough(position, n, new Uint8Array(n));
      this.aheadStart = position;
    }
    const out = into ?? new Uint8Array(length);
    out.set(this.ahead.subarray(position - this.aheadStart, position - this.aheadStart + length));
    return out;
  }

  private async readThrough(position: number, length: number, out: Uint8Array): Promise<Uint8Array> {
    let done = 0;
    while (done < length) {
      let n: number;
      try {
        // Reads of more than 2 GiB at once are refused by the OS; callers ask for far less.
        ({ bytesRead: n } = await this.handle.read(out, done, Math.min(length - done, 1 << 30), position + done));
      } catch (e) {
        throw systemError(this.path, "read it", e);
      }
      if (n === 0) {
        throw fileError("INVALID_DATA", this.path, `ended at byte ${position + done} while reading [${position}, ${position + length}): it changed while being read`);
      }
      done += n;
    }
    return out;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

/**
 * The temporary name an output is written under: beside it (so the final rename stays on one file
 * system), hidden, and carrying the writer's process id, so a later run can tell a leftover of a
 * killed process from a file another live process is still writing.
 * `.model.safetensors.tensorcast-4242-9f2c1a.tmp`
 */
export function temporaryPath(out: string, pid = process.pid): string {
  return join(dirname(out), `.${basename(out)}.tensorcast-${pid}-${randomBytes(4).toString("hex")}.tmp`);
}

/** temporaryPath's names exactly: the output's name, a process id, 8 hex digits. */
const TEMP_PATTERN = /^\.(.+)\.tensorcast-([1-9]\d{0,9})-[0-9a-f]{8}\.tmp$/;

/** Whether `pid` is gone: only ESRCH says so (EPERM is a live process of another user). */
function processIsGone(pid: number): boolean {
  if (pid > 0x7fffffff) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ESRCH";
  }
}

/**
 * Removes the temporary files that killed conversions left beside `out`: a regular file (lstat,
 * never following a link) named exactly as temporaryPath names them, whose process is gone, and
 * which is none of `keep` (the input's own files). Returns the paths removed. Anything else of
 * such a name is left alone: a directory (a killed sharded conversion's, or anyone's), a FIFO, a
 * socket, a device, a symbolic link, a file of a running process: a non-empty folder of such a name
 * may be anyone's work, never removed recursively.
 */
export async function removeStaleTemporaries(out: string, keep?: InputFiles): Promise<string[]> {
  const dir = dirname(out);
  const name = basename(out);
  let list: string[];
  try {
    list = await fsp.readdir(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const entry of list) {
    const m = TEMP_PATTERN.exec(entry);
    if (!m || m[1] !== name) continue;
    const pid = Number(m[2]);
    if (pid === process.pid || !processIsGone(pid)) continue;
    const path = join(dir, entry);
    try {
      const stat = await fsp.lstat(path, { bigint: true });
      if (!stat.isFile() || keep?.findStat(stat)) continue;
      // Should a folder take its place meanwhile, unlink fails (EISDIR) and leaves it.
      await fsp.unlink(path);
      removed.push(path);
    } catch {
      // Someone else removed it first.
    }
  }
  return removed;
}

/** Whether two paths name the same file (hard links and symbolic links included). */
export async function sameFile(a: string, b: string): Promise<boolean> {
  if (resolve(a) === resolve(b)) return true;
  try {
    const [sa, sb] = await Promise.all([fsp.stat(a), fsp.stat(b)]);
    return sa.dev === sb.dev && sa.ino === sb.ino;
  } catch {
    return false;
  }
}

/**
 * An output file written at explicit positions under a temporary name, and renamed to its final
 * name only by `commit()`, after `finish()` flushed its bytes to the disk (and its writer read them
 * back). `abort()` removes it. Either way no partial file ever carries the final name; a process
 * killed mid-way leaves only the hidden temporary, which `removeStaleTemporaries` deletes on the
 * next run.
 */
export class AtomicOutput {
  readonly path: string;
  readonly temporary: string;
  private handle: fsp.FileHandle | undefined;
  /** Small writes gathered: `gatheredLength` bytes from `gatheredAt`, in order. */
  private gathered: Uint8Array[] = [];
  private gatheredAt = 0;
  private gatheredLength = 0;
  /** With `digests`: the SHA-1 digest of every write, to read back in `checkWritten`. */
  private readonly written: { offset: number; length: number; digest: string }[] | undefined;

  private constructor(path: string, temporary: string, handle: fsp.FileHandle, digests: boolean) {
    this.path = path;
    this.temporary = temporary;
    this.handle = handle;
    this.written = digests ? [] : undefined;
  }

  /**
   * Whether every write is hashed, for `checkWritten`.
   * @example (await AtomicOutput.create("m.onnx.data", { digests: true })).digests  // true
   */
  get digests(): boolean {
    return this.written !== undefined;
  }

  /**
   * Creates the temporary file (exclusively: it never replaces anything). With `digests`, every
   * write's bytes are hashed, so that `checkWritten` can compare what the file holds with what was
   * written: for a side file, whose bytes no header describes.
   */
  static async create(path: string, opts: { digests?: boolean } = {}): Promise<AtomicOutput> {
    const temporary = temporaryPath(path);
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(temporary, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644);
    } catch (e) {
      throw systemError(path, `create it (as ${temporary})`, e);
    }
    removeAtExit(temporary);
    return new AtomicOutput(path, temporary, handle, opts.digests === true);
  }

  /**
   * Writes all of `bytes` at `position`. Writes of up to 16 KiB that continue one another are
   * gathered and written together (up to 256 KiB at a time): a file of 200,000 one-byte tensors was
   * otherwise 200,000 system calls, most of the time `convert` spent on it. The caller may reuse
   * `bytes` once the returned promise settles (gathered bytes are copied, since they are written
   * later); a gathered write's error comes from a later `write` or from `finish`.
   */
  async write(bytes: Uint8Array, position: number): Promise<void> {
    this.written?.push({ offset: position, length: bytes.length, digest: sha1Of(bytes) });
    if (bytes.length > SMALL_WRITE) {
      await Promise.all([this.flush(), this.writeThrough(bytes, position)]);
      return;
    }
    if (this.gatheredLength > 0 && position === this.gatheredAt + this.gatheredLength) {
      this.gathered.push(bytes.slice());
      this.gatheredLength += bytes.length;
      if (this.gatheredLength >= GATHER) await this.flush();
      return;
    }
    const flushing = this.flush();
    this.gatheredAt = position;
    this.gathered.push(bytes.slice());
    this.gatheredLength = bytes.length;
    await flushing;
  }

  /** Writes what has been gathered (taking it at once, so later writes gather anew). */
  private flush(): Promise<void> {
    if (this.gatheredLength === 0) {
      this.gathered = [];
      return Promise.resolve();
    }
    const data = new Uint8Array(this.gatheredLength);
    let at = 0;
    for (const piece of this.gathered) {
      data.set(piece, at);
      at += piece.length;
    }
    const position = this.gatheredAt;
    this.gathered = [];
    this.gatheredLength = 0;
    return this.writeThrough(data, position);
  }

  private async writeThrough(bytes: Uint8Array, position: number): Promise<void> {
    const handle = this.opened();
    let done = 0;
    while (done < bytes.length) {
      let n: number;
      try {
        ({ bytesWritten: n } = await handle.write(bytes, done, Math.min(bytes.length - done, 1 << 30), position + done));
      } catch (e) {
        throw systemError(this.path, "write it", e);
      }
      done += n;
    }
  }

  /**
   * Sets the final size and flushes the data to the disk, then closes the temporary, which can now
   * be read back (and verified) before `commit` gives it its final name.
   */
  async finish(size: number): Promise<void> {
    const handle = this.opened();
    try {
      await this.flush();
      await handle.truncate(size);
      await handle.sync();
    } catch (e) {
      await this.abort();
      throw systemError(this.path, "write it", e);
    }
    this.handle = undefined;
    await handle.close().catch(() => undefined);
  }

  /**
   * After `finish`, with `digests`: reads every write back from the temporary (in file order, a
   * write at a time, so memory stays bounded by the largest write) and compares its digest.
   * Returns what differs, or undefined.
   */
  async checkWritten(): Promise<string | undefined> {
    if (!this.written) throw fileError("INTERNAL", this.path, "checkWritten() without digests");
    const file = await RandomAccessFile.open(this.temporary);
    try {
      this.written.sort((a, b) => a.offset - b.offset);
      let buffer = new Uint8Array(0);
      for (const w of this.written) {
        if (w.offset + w.length > file.size) return `bytes [${w.offset}, ${w.offset + w.length}) were written but it has ${file.size} bytes`;
        if (buffer.length < w.length) buffer = new Uint8Array(w.length);
        const bytes = await file.read(w.offset, w.length, buffer.subarray(0, w.length));
        if (sha1Of(bytes) !== w.digest) return `bytes [${w.offset}, ${w.offset + w.length}) read back differ from those written`;
      }
      return undefined;
    } finally {
      await file.close();
    }
  }

  /**
   * Renames the finished temporary to the final name (replacing an existing regular file or
   * symbolic link there only when `replace` is set; the link itself, never its target), then
   * flushes the directory. Whatever else took the final name meanwhile (a FIFO, a device, a
   * directory) is left alone and the temporary removed.
   */
  async commit(replace: boolean): Promise<void> {
    if (this.handle) throw fileError("INTERNAL", this.path, "commit() before finish()");
    try {
      if (!replace) {
        // link() fails when the target exists, so an output that appeared meanwhile is not lost.
        try {
          await fsp.link(this.temporary, this.path);
          await fsp.unlink(this.temporary);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === "EEXIST") throw e;
          // A file system without hard links: check, then rename (a narrow race, not a lost file).
          if (await lstatOrNothing(this.path)) throw Object.assign(new Error("exists"), { code: "EEXIST" });
          await fsp.rename(this.temporary, this.path);
        }
      } else {
        // rename() would replace a FIFO or a device as readily as a file: look first (a narrow
        // race remains between the look and the rename; the checks before converting close most of it).
        const there = await lstatOrNothing(this.path);
        if (there && !there.isFile() && !there.isSymbolicLink()) {
          throw fileError("IO_ERROR", this.path, `became ${kindOf(there)} while converting; it was left alone and nothing was written`);
        }
        await fsp.rename(this.temporary, this.path);
      }
    } catch (e) {
      await this.abort();
      if (e instanceof TensorcastError) throw e;
      if ((e as NodeJS.ErrnoException).code === "EEXIST") {
        // Another writer (a second convert to the same OUT) finished first: the file system's verdict, not a bad option.
        throw fileError("IO_ERROR", this.path, "appeared while converting; nothing was written (use --force to replace it)");
      }
      throw systemError(this.path, "finish writing it", e);
    }
    forgetAtExit(this.temporary);
    try {
      const dir = await fsp.open(dirname(this.path), "r");
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
    } catch {
      // Some file systems cannot sync a directory; the rename itself has happened.
    }
  }

  /** Closes and removes the temporary file; safe to call more than once. */
  async abort(): Promise<void> {
    this.gathered = [];
    this.gatheredLength = 0;
    if (this.handle) {
      await this.handle.close().catch(() => undefined);
      this.handle = undefined;
    }
    await fsp.unlink(this.temporary).catch(() => undefined);
    forgetAtExit(this.temporary);
  }

  private opened(): fsp.FileHandle {
    if (!this.handle) throw fileError("INTERNAL", this.path, "the output is already closed");
    return this.handle;
  }
}

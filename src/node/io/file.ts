/**
 * Files on disk, read and written in bounded pieces: positional reads that fail loudly when a file
 * is shorter than its header says, and an output file that only appears under its final name once
 * it is complete (written under a temporary name, flushed, then renamed).
 *
 * Every error is a TensorcastError whose message starts with the file's path.
 */
import { randomBytes } from "node:crypto";
import { constants, promises as fsp } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { TensorcastError, type ErrorCode } from "../../index.js";

/** A TensorcastError about `file` (and, when given, one of its tensors). */
export function fileError(code: ErrorCode, file: string, message: string, tensor?: string): TensorcastError {
  return new TensorcastError(code, `${file}: ${tensor === undefined ? "" : `tensor ${JSON.stringify(tensor)}: `}${message}`);
}

/** What a system error means, in words, for the file it happened to. */
function systemError(file: string, doing: string, e: unknown): TensorcastError {
  const err = e as NodeJS.ErrnoException;
  const why =
    err.code === "ENOENT" ? "no such file or directory"
    : err.code === "EACCES" || err.code === "EPERM" ? "permission denied"
    : err.code === "EISDIR" ? "is a directory, not a file"
    : err.code === "ENOSPC" ? "no space left on the device"
    : err.message;
  return fileError("INVALID_DATA", file, `cannot ${doing}: ${why}`);
}

/** An open file read at explicit positions; its size is taken once, when it is opened. */
export class RandomAccessFile {
  readonly path: string;
  readonly size: number;
  private readonly handle: fsp.FileHandle;

  private constructor(path: string, handle: fsp.FileHandle, size: number) {
    this.path = path;
    this.handle = handle;
    this.size = size;
  }

  /** @throws TensorcastError INVALID_DATA when the file cannot be opened or is not a regular file. */
  static async open(path: string): Promise<RandomAccessFile> {
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(path, "r");
    } catch (e) {
      throw systemError(path, "open it", e);
    }
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) throw fileError("INVALID_DATA", path, "is not a regular file");
      return new RandomAccessFile(path, handle, stat.size);
    } catch (e) {
      await handle.close();
      throw e instanceof TensorcastError ? e : systemError(path, "read it", e);
    }
  }

  /**
   * Reads exactly `length` bytes at `position` (into `into` when given, which must be that long).
   * @throws TensorcastError INVALID_DATA naming the range when the file ends first.
   */
  async read(position: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    if (position + length > this.size) {
      throw fileError(
        "INVALID_DATA", this.path,
        `is truncated: bytes [${position}, ${position + length}) are needed but the file has ${this.size} bytes`,
      );
    }
    const out = into ?? new Uint8Array(length);
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

const TEMP_PATTERN = /^\.(.+)\.tensorcast-(\d+)-[0-9a-f]+\.tmp$/;

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Removes the temporary files that killed conversions left beside `out` (those whose process is
 * gone). Returns the paths removed. Never touches a file another running process is writing.
 */
export async function removeStaleTemporaries(out: string): Promise<string[]> {
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
    if (pid === process.pid || processIsAlive(pid)) continue;
    try {
      await fsp.unlink(join(dir, entry));
      removed.push(join(dir, entry));
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
 * name only by `commit()`, after its bytes reached the disk. `abort()` removes it. Either way no
 * partial file ever carries the final name; a process killed mid-way leaves only the hidden
 * temporary, which `removeStaleTemporaries` deletes on the next run.
 */
export class AtomicOutput {
  readonly path: string;
  readonly temporary: string;
  private handle: fsp.FileHandle | undefined;

  private constructor(path: string, temporary: string, handle: fsp.FileHandle) {
    this.path = path;
    this.temporary = temporary;
    this.handle = handle;
  }

  /** Creates the temporary file (exclusively: it never replaces anything). */
  static async create(path: string): Promise<AtomicOutput> {
    const temporary = temporaryPath(path);
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(temporary, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644);
    } catch (e) {
      throw systemError(path, `create it (as ${temporary})`, e);
    }
    return new AtomicOutput(path, temporary, handle);
  }

  /** Writes all of `bytes` at `position`. */
  async write(bytes: Uint8Array, position: number): Promise<void> {
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
   * Sets the final size, flushes the data to the disk, and renames the temporary to the final
   * name (replacing an existing file there only when `replace` is set), then flushes the directory.
   */
  async commit(size: number, replace: boolean): Promise<void> {
    const handle = this.opened();
    try {
      await handle.truncate(size);
      await handle.sync();
      await handle.close();
      this.handle = undefined;
      if (!replace) {
        // link() fails when the target exists, so an output that appeared meanwhile is not lost.
        try {
          await fsp.link(this.temporary, this.path);
          await fsp.unlink(this.temporary);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === "EEXIST") throw e;
          // A file system without hard links: check, then rename (a narrow race, not a lost file).
          if (await fsp.access(this.path).then(() => true, () => false)) {
            throw Object.assign(new Error("exists"), { code: "EEXIST" });
          }
          await fsp.rename(this.temporary, this.path);
        }
      } else {
        await fsp.rename(this.temporary, this.path);
      }
    } catch (e) {
      await this.abort();
      if ((e as NodeJS.ErrnoException).code === "EEXIST") {
        throw fileError("INVALID_DATA", this.path, "appeared while converting; nothing was written (use --force to replace it)");
      }
      throw systemError(this.path, "finish writing it", e);
    }
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
    if (this.handle) {
      await this.handle.close().catch(() => undefined);
      this.handle = undefined;
    }
    await fsp.unlink(this.temporary).catch(() => undefined);
  }

  private opened(): fsp.FileHandle {
    if (!this.handle) throw fileError("INVALID_DATA", this.path, "output is already closed");
    return this.handle;
  }
}

/**
 * castAsync's platform-independent scheduler and pool (src/parallel/), driven by an in-process
 * WorkerHost: "workers" that answer on a later task with castRange, and ones that fail; with shared
 * memory and without (ranges copied to the workers and back). What a real
 * platform adds is tested with it (test/node/cast-async.test.ts, test/browser/cast-async.test.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cast, Tensor, TensorcastError } from "../../src/index.js";
import type { WorkerEvents, WorkerHandle, WorkerHost } from "../../src/parallel/pool.js";
import { castRange } from "../../src/parallel/range.js";
import { castAsyncOn, castIntoAsyncOn, closePool, sharedZerosOf } from "../../src/parallel/split.js";

/** A host whose workers run in this thread, each request answered on a later macrotask; `broken` workers fail instead. */
function fakeHost(o: { broken?: boolean; workers?: boolean; shared?: boolean } = {}): WorkerHost & { spawned: number; posted: number; postedElements: number; terminated: number } {
  const host = {
    spawned: 0,
    posted: 0,
    postedElements: 0,
    terminated: 0,
    parallelism: () => 3,
    hasWorkers: () => o.workers ?? true,
    sharedMemory: () => o.shared ?? true,
    spawn(events: WorkerEvents): WorkerHandle {
      host.spawned++;
      return {
        post: (request) => {
          host.posted++;
          host.postedElements += request.count;
          setTimeout(() => {
            if (o.broken) events.error(new TensorcastError("WORKER_FAILED", "the fake worker failed"));
            else events.message(castRange(request).response);
          }, 0);
        },
        busy: () => undefined,
        terminate: async () => {
          host.terminated++;
        },
      };
    },
  };
  return host;
}

function input(n: number): Tensor {
  const x = Tensor.zeros("float32", [n]);
  const f = x.data as Float32Array;
  for (let i = 0; i < n; i++) f[i] = Math.sin(i) * 2 ** ((i % 40) - 20);
  return x;
}

test("the ranges a host's workers convert and the caller's own give cast's bytes; the default threads come from the host", async () => {
  const host = fakeHost();
  const x = input(200_003);
  for (const to of ["float16", "float8e4m3fn", "uint4", "float6e3m2"] as const) {
    const y = await castAsyncOn(host, x, to, { minElements: 0 });
    assert.deepEqual(y.bytes(), cast(x, to).bytes(), to);
    assert.ok((y.data as Uint8Array).buffer instanceof SharedArrayBuffer);
  }
  assert.equal(host.spawned, 2, "parallelism() 3: two workers besides the caller");
  assert.ok(host.posted >= 8, `only ${host.posted} ranges went to the workers`);
  const out = sharedZerosOf("bfloat16", x.shape);
  assert.equal(await castIntoAsyncOn(host, x, out, { minElements: 0 }), out);
  assert.deepEqual(out.bytes(), cast(x, "bfloat16").bytes());
  await closePool(host);
  assert.equal(host.terminated, 2);
});

test("a host without workers runs cast in the calling thread", async () => {
  const host = fakeHost({ workers: false });
  const x = input(50_000);
  const y = await castAsyncOn(host, x, "float16", { minElements: 0, threads: 4 });
  assert.deepEqual(y.bytes(), cast(x, "float16").bytes());
  assert.ok(!((y.data as Uint16Array).buffer instanceof SharedArrayBuffer));
  const out = sharedZerosOf("float16", x.shape);
  await castIntoAsyncOn(host, x, out, { minElements: 0, threads: 4 });
  assert.deepEqual(out.bytes(), y.bytes());
  assert.equal(host.spawned, 0);
});

test("a failing worker rejects the call with its WORKER_FAILED error; the next call starts a new pool", async () => {
  const broken = { broken: true };
  const host = fakeHost(broken);
  const x = input(100_000);
  await assert.rejects(castAsyncOn(host, x, "float16", { minElements: 0, threads: 2 }), (e: unknown) =>
    e instanceof TensorcastError && e.code === "WORKER_FAILED" && e.message === "the fake worker failed");
  assert.equal(host.terminated, 1, "the broken pool was closed");
  broken.broken = false;
  const y = await castAsyncOn(host, x, "float16", { minElements: 0, threads: 2 });
  assert.deepEqual(y.bytes(), cast(x, "float16").bytes());
  assert.equal(host.spawned, 2, "a new worker for the new pool");
  await closePool(host);
});

test("a range a worker cannot convert rejects with the error it answered", async () => {
  const host = fakeHost();
  const failing: WorkerHost = {
    ...host,
    spawn: (events) => host.spawn({
      message: (r) => events.message({ id: r.id, error: { name: "TensorcastError", code: "INVALID_DATA", message: "bad range" } }),
      error: events.error,
    }),
  };
  await assert.rejects(castAsyncOn(failing, input(60_000), "float16", { minElements: 0, threads: 2 }), (e: unknown) =>
    e instanceof TensorcastError && e.code === "INVALID_DATA" && e.message === "bad range");
  await closePool(failing);
});

test("without shared memory, every range is copied to a worker and back: cast's bytes, on ordinary memory", async () => {
  const host = fakeHost({ shared: false });
  const x = input(300_001);
  for (const [to, opts] of [["float16", {}], ["float8e5m2", { saturate: false }], ["int4", {}], ["float6e2m3", {}], ["uint64", {}]] as const) {
    const before = host.posted;
    const y = await castAsyncOn(host, x, to, { ...opts, minElements: 0, threads: 3 });
    assert.deepEqual(y.bytes(), cast(x, to, opts).bytes(), to);
    assert.ok(!((y.data as Uint8Array).buffer instanceof SharedArrayBuffer));
    // 300001 elements in chunks of at most 2^18 / (4 * 2 workers) rounded: every one went to a worker.
    assert.ok(host.posted - before >= 8, `${to}: ${host.posted - before} ranges posted`);
  }
  // castIntoAsync: any output (ordinary memory), filled with garbage first.
  const out = Tensor.zeros("bfloat16", x.shape);
  (out.data as Uint16Array).fill(0xdead);
  assert.equal(await castIntoAsyncOn(host, x, out, { minElements: 0, threads: 2 }), out);
  assert.deepEqual(out.bytes(), cast(x, "bfloat16").bytes());
  const packed = Tensor.zeros("uint2", x.shape);
  (packed.data as Uint8Array).fill(0xff);
  await castIntoAsyncOn(host, x, packed, { minElements: 0, threads: 2 });
  assert.deepEqual(packed.bytes(), cast(x, "uint2").bytes());
  await closePool(host);
});

test("without shared memory, a failing range rejects the call once every range has settled", async () => {
  const broken = { shared: false, broken: true };
  const host = fakeHost(broken);
  await assert.rejects(castAsyncOn(host, input(100_000), "float16", { minElements: 0, threads: 2 }), (e: unknown) =>
    e instanceof TensorcastError && e.code === "WORKER_FAILED");
  broken.broken = false;
  const x = input(100_000);
  assert.deepEqual((await castAsyncOn(host, x, "float16", { minElements: 0, threads: 2 })).bytes(), cast(x, "float16").bytes());
  await closePool(host);
});

test("concurrent calls share one pool and each gets its own bytes, with and without shared memory", async () => {
  for (const shared of [true, false]) {
    const host = fakeHost({ shared });
    const inputs = [0, 1, 2, 3, 4].map((s) => input(70_000 + 13 * s));
    const targets = ["float16", "float8e4m3fnuz", "uint4", "bfloat16", "int8"] as const;
    const got = await Promise.all(inputs.map((x, i) => castAsyncOn(host, x, targets[i], { minElements: 0, threads: 3 })));
    got.forEach((y, i) => assert.deepEqual(y.bytes(), cast(inputs[i], targets[i]).bytes(), `${targets[i]} shared ${shared}`));
    assert.equal(host.spawned, 2, "one pool of two workers for all five calls");
    await closePool(host);
  }
});

test("callerConverts: false leaves every range to the workers; the calling thread converts none", async () => {
  const host = fakeHost();
  const x = input(250_007);
  for (const threads of [2, 3]) {
    for (const sharedInput of [false, true]) {
      let xi = x;
      if (sharedInput) {
        xi = sharedZerosOf("float32", x.shape);
        (xi.data as Float32Array).set(x.data as Float32Array);
      }
      const before = host.postedElements;
      const y = await castAsyncOn(host, xi, "float8e5m2", { minElements: 0, threads, callerConverts: false });
      assert.deepEqual(y.bytes(), cast(x, "float8e5m2").bytes());
      assert.equal(host.postedElements - before, x.size, `threads ${threads}, shared input ${sharedInput}: not every element went to a worker`);
    }
  }
  const out = sharedZerosOf("float16", x.shape);
  const before = host.postedElements;
  await castIntoAsyncOn(host, x, out, { minElements: 0, threads: 2, callerConverts: false });
  assert.deepEqual(out.bytes(), cast(x, "float16").bytes());
  assert.equal(host.postedElements - before, x.size);
  // The default: the calling thread converts a share.
  const mid = host.postedElements;
  await castAsyncOn(host, x, "float16", { minElements: 0, threads: 2 });
  assert.ok(host.postedElements - mid < x.size, "with callerConverts at its default, the calling thread converted nothing");
  await assert.rejects(castAsyncOn(host, x, "float16", { minElements: 0, callerConverts: "no" as never }), (e: unknown) =>
    e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE" && e.message === 'callerConverts must be true or false, got "no"');
  await closePool(host);
});

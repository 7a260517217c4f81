/**
 * Test-only fault injection: `node --import <this file> bin/tensorcast.js convert ...` runs the
 * real CLI with dist/node/io/writer.js altered so that it plans a corrupt file, as a writer bug
 * would. TENSORCAST_TEST_CORRUPT picks the fault (see corrupt-writer-hooks.ts). Nothing in src/
 * knows about it.
 */
import { register } from "node:module";

register("./corrupt-writer-hooks.js", import.meta.url);

// Builds tests/fixture.ts into tests/build/fixture.wasm with asc's API, using
// asconfig.plugin.json plus 4 pages of memory.
import asc from "assemblyscript/asc";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
mkdirSync(join(root, "tests/build"), { recursive: true });
const { error, stderr } = await asc.main(
  [
    "tests/fixture.ts",
    "--config", "asconfig.plugin.json",
    "--initialMemory", "4",
    "--maximumMemory", "4",
    "--outFile", "tests/build/fixture.wasm",
  ],
  { stdout: process.stdout, stderr: process.stderr, baseDir: root },
);
if (error) {
  console.error(stderr.toString());
  process.exit(1);
}

// The package's types from the API's OpenAPI document: `make ts-types` runs
//   python -m turnkeep.api.openapi_dump | node scripts/types.mjs - src/schema.ts
// and tests/integration/test_typescript_client.py runs it on the current document and
// compares the result with the committed src/schema.ts. One place for the options.
//
// usage: node scripts/types.mjs <openapi.json | -> [out]   (no out: stdout)

import { readFile, writeFile } from "node:fs/promises";
import openapiTS, { astToString } from "openapi-typescript";

const HEADER = `/**
 * Generated from turnkeep's OpenAPI document by openapi-typescript
 * (clients/typescript/scripts/types.mjs): do not edit. Regenerate with \`make ts-types\`.
 */

`;

async function readInput(path) {
  if (path !== "-") return readFile(path, "utf8");
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

const [input, output] = process.argv.slice(2);
if (!input) {
  console.error("usage: node scripts/types.mjs <openapi.json | -> [out]");
  process.exit(2);
}
const document = JSON.parse(await readInput(input));
// a field with a default is optional, as a request may leave it out
const ast = await openapiTS(document, { defaultNonNullable: false, silent: true });
const text = HEADER + astToString(ast);
if (output) await writeFile(output, text, "utf8");
else process.stdout.write(text);

// Validates .glb files with the Khronos glTF validator; prints one line per file and every
// error, and exits non-zero if any file has an error. Usage: node validate.mjs FILE...
import { readFileSync } from 'node:fs';
import validator from 'gltf-validator';

let failed = 0;
for (const file of process.argv.slice(2)) {
  const report = await validator.validateBytes(new Uint8Array(readFileSync(file)), {
    maxIssues: 100,
  });
  const n = report.issues.numErrors;
  console.log(`${file}: ${n} errors, ${report.issues.numWarnings} warnings`);
  for (const m of report.issues.messages.filter((m) => m.severity === 0)) {
    console.log(`  ${m.code} ${m.pointer ?? ''}: ${m.message}`);
  }
  if (n > 0) failed++;
}
process.exit(failed ? 1 : 0);

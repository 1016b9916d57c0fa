// Browser tests: the chat page and the npm package in headless Chromium. Most run on WebGPU's
// compatibility mode, which here is lavapipe (the CPU Vulkan device the native tests use) through Dawn's
// OpenGL ES backend on ANGLE; the tests named "core" run on core WebGPU, which here is SwiftShader, a
// slower CPU adapter. Both prove correctness, not speed. Each test says the adapters it ran on.
// Needs `npm run build` (pkg/) and the default model.
// Usage: node tests/browser/run.mjs [regular expression that picks tests by name]

import { adaptersUsed, context, noCors, noRange, profile, server, steered, tests } from './harness.mjs';
import './chat-page.mjs';
import './package.mjs';
import './models.mjs';
import './embeddings.mjs';
import './vision.mjs';
import { rmSync } from 'node:fs';

// ---- Run ---------------------------------------------------------------------------------------------

const filter = process.argv[2];
let failed = 0;
for (const { name, fn } of tests) {
  // The first test loads the chat page that later page tests use.
  if (filter && !new RegExp(filter).test(name) && tests[0].name !== name) continue;
  const start = Date.now();
  adaptersUsed.clear();
  const took = () => {
    const on = adaptersUsed.size ? `, on ${[...adaptersUsed].join(' and ')}` : '';
    return `(${((Date.now() - start) / 1000).toFixed(1)} s${on})`;
  };
  try {
    await fn();
    console.log(`ok   ${name} ${took()}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name} ${took()}\n    ${e.stack || e}`);
  }
}
await context.close();
for (const s of [server, noRange, noCors, steered.server]) s.close();
rmSync(profile, { recursive: true, force: true });
console.log(failed ? `${failed} browser test(s) failed` : 'browser tests passed');
process.exit(failed ? 1 : 0);

// End-to-end tests: a real `gpuscale serve` (simulated GPUs, emulated replicas) driven through
// Debian's Chromium with playwright-core. Slow (about a minute); run by scripts/web-test.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/e2e/**/*.e2e.ts'],
    environment: 'node',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    sequence: { concurrent: false },
  },
});

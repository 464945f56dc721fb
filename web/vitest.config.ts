// Unit tests: view logic without a browser (formatting, chart data shaping, SSE parsing and
// the stream client, API client auth/error mapping, routing). Fast and deterministic.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: { include: ['tests/unit/**/*.test.ts'], environment: 'node' },
});

import { isAbsolute, resolve } from 'node:path';
import preact from '@preact/preset-vite';
import { defineConfig } from 'vitest/config';

// The Rust build script sets WEIR_UI_OUT_DIR (an absolute path) to build into its own
// output directory; developers get `dist/`.
const outDir = process.env.WEIR_UI_OUT_DIR
  ? isAbsolute(process.env.WEIR_UI_OUT_DIR)
    ? process.env.WEIR_UI_OUT_DIR
    : resolve(process.env.WEIR_UI_OUT_DIR)
  : 'dist';

// The dev server forwards the API to a running `weir demo` (or `weir serve`).
const apiTarget = process.env.WEIR_API_URL ?? 'http://127.0.0.1:18080';

export default defineConfig({
  plugins: [preact()],
  // Served by Weir at `/`: index.html at `/`, hashed files under `/assets/`.
  base: '/',
  build: {
    outDir,
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
  },
  server: {
    proxy: {
      '/api': { target: apiTarget, changeOrigin: false },
      '/healthz': { target: apiTarget },
    },
  },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
    // Time formatting is tested against fixed clock readings.
    env: { TZ: 'UTC' },
  },
});

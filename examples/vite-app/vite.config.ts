import { defineConfig } from "vite";

// The package comes linked from the repository's pkg/ (package.json: "file:../../pkg"), outside
// this project: the dev server may serve its files (the .wasm) from there too.
export default defineConfig({ server: { fs: { allow: [".", "../../pkg"] } } });

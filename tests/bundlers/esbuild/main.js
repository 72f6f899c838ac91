// esbuild leaves `new URL(..., import.meta.url)` alone, so the page imports the .wasm itself
// (the `file` loader copies it and gives its URL) and passes it to init().
import wasmUrl from "session-broker/session_broker_bg.wasm";
import { run } from "./app.js";
run({ module_or_path: new URL(wasmUrl, import.meta.url) });

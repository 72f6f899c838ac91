// Vite resolves the glue's `new URL("session_broker_bg.wasm", import.meta.url)` and emits the file.
import { run } from "./app.js";
run();

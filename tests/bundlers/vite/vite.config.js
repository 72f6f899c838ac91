export default { base: "./", logLevel: "warn", build: { outDir: "dist", emptyOutDir: true, target: "es2022" } };

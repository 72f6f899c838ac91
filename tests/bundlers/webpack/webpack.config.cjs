const path = require("node:path");
module.exports = {
  mode: "production",
  entry: "./main.js",
  output: { path: path.resolve(__dirname, "dist"), filename: "main.js", module: true, publicPath: "auto", clean: true },
  experiments: { outputModule: true },
  performance: { hints: false },
};

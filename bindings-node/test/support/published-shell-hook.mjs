// A module resolve hook (registered with `module.register` by
// published-shell.test.mjs): when @rindle/room's own `dist/shell.js` is imported under
// a URL that carries the query `?room=native`, that copy's import of `./wasm.js`
// resolves to `native-wasm.mjs`, which hands it the native `WasmRoom`. Every other
// import, and the plain `dist/shell.js` (the package on its own wasm room), resolves as
// usual, so both copies of the shell live side by side in one process.

let adapterUrl;
let shellSuffix;

/** `data`: `{ adapterUrl, shellSuffix }` from the `register` call. */
export function initialize(data) {
  adapterUrl = data.adapterUrl;
  shellSuffix = data.shellSuffix;
}

export async function resolve(specifier, context, nextResolve) {
  if (specifier === "./wasm.js" && context.parentURL?.endsWith(shellSuffix)) {
    return { url: adapterUrl, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

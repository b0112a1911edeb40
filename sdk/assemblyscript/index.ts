// Entry point of the package for asc, which resolves "@voxhost/sdk" to
// node_modules/@voxhost/sdk/index.ts. The SDK lives in assembly/.
export * from "./assembly/index";

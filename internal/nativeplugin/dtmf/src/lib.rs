//! The stock dtmf plugin compiled for the host: its source file itself, as
//! a module of this static library (std supplies the panic handler that the
//! plugin's `no_std` build gets from the SDK on wasm32). Its exports keep
//! their ABI names (vox_process, ...); the SDK's `native-host` feature makes
//! its log and emit calls reach internal/nativeplugin's C functions.

// The file's `#![no_std]` is a crate attribute, which does nothing in a module.
#[allow(unused_attributes)]
#[path = "../../../../plugins/dtmf/src/lib.rs"]
mod dtmf;

// Linker arguments for the wasm32 build, set here rather than in
// .cargo/config.toml so that they apply whatever directory cargo runs from
// and whatever RUSTFLAGS holds (see sdk/rust/README.md).
fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        // 4 KiB of shadow stack and one 64 KiB page of memory, minimum =
        // maximum: the memory never grows. wasm-ld fails if the stack, data
        // and frame buffer do not fit. Rust puts the stack first, below the
        // data, so an overflow traps at address 0 rather than overwriting
        // the state. The deepest call chain (vox_process or vox_rate into
        // the filter design; no recursion, no indirect calls) takes 880
        // bytes, so the stack is one OS page, 4.6 times that, and the
        // constants, the state and the head of the frame buffer share the
        // next: a call touches 2 pages of 4 KiB at 8 to 48 kHz (only the
        // pages a plugin touches cost the host memory). It was 8 KiB, which
        // put the data and state on pages 2 and 6.
        for arg in ["-zstack-size=4096", "--initial-memory=65536", "--max-memory=65536"] {
            println!("cargo:rustc-link-arg={}", arg);
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

// Linker arguments for the wasm32 build, set here rather than in
// .cargo/config.toml so that they apply whatever directory cargo runs from
// and whatever RUSTFLAGS holds (see sdk/rust/README.md).
fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        // 8 KiB of shadow stack (the detector keeps its state in statics and
        // needs a few hundred bytes of stack) and one 64 KiB page of memory,
        // minimum = maximum: the memory never grows. wasm-ld fails if the
        // stack, data and frame buffer do not fit.
        for arg in ["-zstack-size=8192", "--initial-memory=65536", "--max-memory=65536"] {
            println!("cargo:rustc-link-arg={}", arg);
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

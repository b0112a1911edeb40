// Linker arguments for the wasm32 build, set here rather than in
// .cargo/config.toml so that they apply whatever directory cargo runs from
// and whatever RUSTFLAGS holds (voxhost/README.md explains them).
fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        // 16 KiB of shadow stack instead of rustc's default 1 MiB, and one
        // 64 KiB page of memory, minimum = maximum: the memory never grows.
        for arg in ["-zstack-size=16384", "--initial-memory=65536", "--max-memory=65536"] {
            println!("cargo:rustc-link-arg={}", arg);
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

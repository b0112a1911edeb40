//! The voxhost plugin SDK for Rust: ABI v1 (`abi/ABI.md`), `no_std`, no dependencies.
//!
//! A plugin is a type that implements [`Plugin`], registered once with
//! [`plugin!`], which defines every export of the ABI (`voxhost_abi_v1`,
//! `vox_buffer`, `vox_init`, `vox_rate`, `vox_event`, `vox_process`) over a
//! static, 16-byte aligned frame buffer and one static instance of the type:
//!
//! ```ignore
//! #![no_std]
//! use voxhost::{Config, Plugin, Status};
//!
//! struct Gain { q8: i32 }
//!
//! impl Plugin for Gain {
//!     fn init(&mut self, config: &Config) -> Result<(), Status> {
//!         let x = config.number_or("gain", 1.0).ok_or(Status::BAD_CONFIG)?;
//!         self.q8 = voxhost::round_half_up(x * 256.0) as i32;
//!         Ok(())
//!     }
//!     fn process(&mut self, samples: &mut [i16]) -> usize {
//!         for s in samples.iter_mut() {
//!             *s = voxhost::sat16((*s as i32 * self.q8) >> 8);
//!         }
//!         samples.len()
//!     }
//! }
//!
//! voxhost::plugin!(Gain, Gain { q8: 256 });
//! ```
//!
//! Build the plugin crate (`crate-type = ["cdylib"]`) for
//! `wasm32-unknown-unknown`; see the README for the linker arguments that keep
//! its memory at one page.
#![no_std]
#![warn(missing_docs)]

#[allow(missing_docs)]
pub mod abi;
mod config;
mod math;
mod text;

pub use abi::*;
pub use config::Config;
pub use config::Keys;
pub use math::{db_to_gain, exp, floor, gain_to_db, ln, log10, powf, round_half_up, sat16, FULL_SCALE, LN10};
pub use text::StrBuf;

/// A status code of the ABI: the negative result of an export.
///
/// Plugins return it as the error of [`Plugin::init`], [`Plugin::rate`] and
/// [`Plugin::process_frame`]. The ABI codes are the associated constants; a
/// plugin MAY use other negative codes (the host reports them as "unknown").
/// A code that is not negative is sent as [`STATUS_ERROR`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status(pub i32);

impl Status {
    /// Unspecified failure (-1).
    pub const ERROR: Status = Status(STATUS_ERROR);
    /// The configuration is rejected (-2).
    pub const BAD_CONFIG: Status = Status(STATUS_BAD_CONFIG);
    /// The input rate is not accepted (-3).
    pub const BAD_RATE: Status = Status(STATUS_BAD_RATE);
    /// The frame length is not accepted (-4).
    pub const BAD_LENGTH: Status = Status(STATUS_BAD_LENGTH);
    /// The call came out of order (-5).
    pub const BAD_STATE: Status = Status(STATUS_BAD_STATE);

    /// The code as an export returns it: always negative.
    pub const fn code(self) -> i32 {
        if self.0 < 0 {
            self.0
        } else {
            STATUS_ERROR
        }
    }
}

/// Level of a log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Level {
    /// Detail for the plugin's author.
    Debug = LOG_DEBUG,
    /// Normal operation.
    Info = LOG_INFO,
    /// Something odd that did not stop the plugin.
    Warn = LOG_WARN,
    /// A failure, e.g. the reason for a rejected configuration.
    Error = LOG_ERROR,
}

#[cfg(target_arch = "wasm32")]
mod sys {
    #[link(wasm_import_module = "voxhost")]
    extern "C" {
        // The Rust names differ from the import names so that they cannot
        // collide with a symbol of the same name (compiler-builtins defines a
        // `log`, the math function) at link time.
        #[link_name = "log"]
        pub fn voxhost_log(level: i32, ptr: *const u8, len: i32);
        #[link_name = "emit"]
        pub fn voxhost_emit(name_ptr: *const u8, name_len: i32, data_ptr: *const u8, data_len: i32);
    }
}

// With the `native-host` feature, on targets other than wasm32, the host
// functions are C functions of the program the plugin is linked into:
// internal/nativeplugin compiles the stock dtmf plugin for the host so, to
// measure it beside its WebAssembly build, and counts what it emits.
#[cfg(all(feature = "native-host", not(target_arch = "wasm32")))]
mod sys {
    extern "C" {
        pub fn voxhost_log(level: i32, ptr: *const u8, len: i32);
        pub fn voxhost_emit(name_ptr: *const u8, name_len: i32, data_ptr: *const u8, data_len: i32);
    }
}

/// Writes `msg` to the host log, attributed to the plugin and the call.
///
/// The host keeps at most [`MAX_LOG_LEN`] bytes of it. On targets other than
/// wasm32 (unit tests of a plugin's DSP on the build machine) it does nothing.
#[inline]
pub fn log(level: Level, msg: &str) {
    #[cfg(any(target_arch = "wasm32", feature = "native-host"))]
    unsafe {
        sys::voxhost_log(level as i32, msg.as_ptr(), msg.len() as i32)
    }
    #[cfg(not(any(target_arch = "wasm32", feature = "native-host")))]
    let _ = (level, msg);
}

/// Logs at [`Level::Debug`].
#[inline]
pub fn debug(msg: &str) {
    log(Level::Debug, msg)
}
/// Logs at [`Level::Info`].
#[inline]
pub fn info(msg: &str) {
    log(Level::Info, msg)
}
/// Logs at [`Level::Warn`].
#[inline]
pub fn warn(msg: &str) {
    log(Level::Warn, msg)
}
/// Logs at [`Level::Error`].
#[inline]
pub fn error(msg: &str) {
    log(Level::Error, msg)
}

/// Sends an event to the call's client.
///
/// `name` is 1 to [`MAX_EMIT_NAME_LEN`] bytes of `[a-z0-9_.-]`; `data` is
/// empty or one JSON value of at most [`MAX_EMIT_DATA_LEN`] bytes, sent as is
/// (build it with [`StrBuf`]). The host drops, and counts, an event that
/// breaks these rules; it never traps. On targets other than wasm32 it does
/// nothing.
#[inline]
pub fn emit(name: &str, data: &str) {
    #[cfg(any(target_arch = "wasm32", feature = "native-host"))]
    unsafe {
        sys::voxhost_emit(name.as_ptr(), name.len() as i32, data.as_ptr(), data.len() as i32)
    }
    #[cfg(not(any(target_arch = "wasm32", feature = "native-host")))]
    let _ = (name, data);
}

/// An event the host delivers through `vox_event`.
#[derive(Debug)]
pub enum Event<'a> {
    /// The call began. The call metadata, one JSON object such as
    /// `{"call_id":"CA…","protocol":"twilio","sample_rate":8000,"stage":0,"params":{…}}`;
    /// read it with [`Config::new`]. It lives in the frame buffer: copy what you keep.
    CallStart(&'a [u8]),
    /// The call ended; no further calls follow.
    CallEnd,
    /// The caller pressed a key: `0`-`9`, `*`, `#`, `A`-`D`.
    Dtmf(char),
    /// Barge-in: drop all audio the plugin holds.
    Clear,
    /// The input ended. The slice is the whole frame buffer: write the samples
    /// the plugin still holds at its start and return their count from
    /// [`Plugin::on_event`] (0 if none); they flow downstream as a last frame.
    Flush(&'a mut [i16]),
    /// A kind this SDK does not know, with its argument. Return 0: new kinds
    /// are added within ABI v1 and MUST be ignored.
    Unknown(i32, i32),
}

/// The frame `vox_process` works on: the input samples at the start of the
/// frame buffer, and the whole buffer for plugins whose output is longer than
/// their input (resamplers, plugins that release held audio).
pub struct Frame<'a> {
    buf: &'a mut [i16],
    len: usize,
}

impl<'a> Frame<'a> {
    /// Wraps a buffer whose first `len` samples are the input (for tests).
    ///
    /// # Panics
    /// If `len` exceeds `buf.len()`.
    pub fn new(buf: &'a mut [i16], len: usize) -> Self {
        assert!(len <= buf.len());
        Frame { buf, len }
    }

    /// Number of input samples (at least 1).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: the host never sends an empty frame.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of samples the buffer holds: the most a plugin may return.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// The input samples, to process in place.
    #[inline]
    pub fn samples(&mut self) -> &mut [i16] {
        &mut self.buf[..self.len]
    }

    /// The whole buffer, [`capacity`](Frame::capacity) samples; the input is
    /// at `[..len]`. Write the output at its start and return its length.
    #[inline]
    pub fn buffer(&mut self) -> &mut [i16] {
        self.buf
    }
}

/// A voxhost plugin. One value of the type serves one call: the host makes a
/// fresh instance of the module per call, so state never leaks between calls.
pub trait Plugin {
    /// Reads the configuration, once, before anything else but the buffer.
    ///
    /// The default accepts only an empty object (`{}`), and otherwise logs
    /// the reason and returns [`Status::BAD_CONFIG`], as the host would for a
    /// plugin without `vox_init`. Copy what you keep: the config lives in the
    /// frame buffer.
    fn init(&mut self, config: &Config) -> Result<(), Status> {
        if config.is_empty() {
            Ok(())
        } else {
            error("this plugin takes no configuration");
            Err(Status::BAD_CONFIG)
        }
    }

    /// Accepts the input sample rate and returns the output rate, once,
    /// after [`init`](Plugin::init). The default accepts every rate and
    /// keeps it.
    fn rate(&mut self, input_rate: u32) -> Result<u32, Status> {
        Ok(input_rate)
    }

    /// Processes one frame in place and returns the number of output samples
    /// now at the start of `samples` (0 swallows the frame). `samples` holds
    /// at least one sample.
    fn process(&mut self, samples: &mut [i16]) -> usize;

    /// Processes one frame, with access to the whole buffer. The default
    /// calls [`process`](Plugin::process) on the input. Override it to return
    /// more samples than came in (write them in [`Frame::buffer`], at most
    /// [`Frame::capacity`]) or to fail with a status; `process` is then never
    /// called (implement it as `unreachable!()`).
    fn process_frame(&mut self, frame: &mut Frame) -> Result<usize, Status> {
        Ok(self.process(frame.samples()))
    }

    /// Handles an event; returns 0 on success, a negative status on failure,
    /// or for [`Event::Flush`] the number of tail samples written. The
    /// default ignores every event and returns 0.
    fn on_event(&mut self, event: Event) -> i32 {
        let _ = event;
        STATUS_OK
    }
}

/// Defines the exports of the ABI for a [`Plugin`] type.
///
/// `voxhost::plugin!(Type, constructor)` uses a 16 KiB frame buffer (8192
/// samples: 1 s at 8 kHz, more than the host asks for at 48 kHz);
/// `voxhost::plugin!(Type, constructor, buffer_bytes = N)` sets another size.
/// The constructor is an expression of type `Type`, evaluated once, on the
/// first call of the instance (`vox_buffer`). Use the macro once per plugin
/// crate, at its root.
///
/// A last argument, a name (`voxhost::plugin!(Type, constructor, far_end)`
/// or after `buffer_bytes = N`), asks for the far-end reference (ABI §11):
/// the module then exports `vox_reference`, and the macro defines
/// `fn far_end(len: usize) -> &'static [i16]` by that name at the crate's
/// root, the reference of the frame being processed (its first `len`
/// samples; silence where there is no far end), valid during `process`.
#[macro_export]
macro_rules! plugin {
    ($ty:ty, $new:expr) => {
        $crate::plugin!($ty, $new, buffer_bytes = 16384);
    };
    ($ty:ty, $new:expr, $reference:ident) => {
        $crate::plugin!($ty, $new, buffer_bytes = 16384, $reference);
    };
    ($ty:ty, $new:expr, buffer_bytes = $bytes:expr $(, $reference:ident)?) => {
        $(
            /// The far-end reference of the frame being processed (ABI §11).
            pub fn $reference(len: usize) -> &'static [i16] {
                __voxhost_exports::REFERENCE.head(len)
            }
        )?
        #[doc(hidden)]
        #[allow(missing_docs)]
        pub mod __voxhost_exports {
            #[allow(unused_imports)]
            use super::*;

            const _: () = assert!(
                ($bytes) % 16 == 0 && ($bytes) >= 320 && ($bytes) <= 0x4000_0000,
                "buffer_bytes must be a multiple of 16 from 320 (one 20 ms frame) to 1 GiB"
            );

            // RUNTIME first: statics are laid out in the order they are
            // declared, so the plugin's state comes before the large buffer
            // and shares an OS page with the head of it, the part a frame
            // uses (only the pages a plugin touches cost the host memory).
            static RUNTIME: $crate::__rt::Runtime<$ty> = $crate::__rt::Runtime::new();
            static BUFFER: $crate::__rt::Buffer<{ ($bytes) / 2 }> = $crate::__rt::Buffer::new();

            fn construct() -> $ty {
                $new
            }

            #[export_name = "voxhost_abi_v1"]
            pub extern "C" fn voxhost_abi_v1() {}

            #[export_name = "vox_buffer"]
            pub extern "C" fn vox_buffer(capacity_bytes: i32) -> i32 {
                RUNTIME.buffer(&BUFFER, capacity_bytes, construct)
            }

            // Compiled for the host, the buffer's address does not fit
            // vox_buffer's i32: a program that links the plugin natively
            // (internal/nativeplugin) calls vox_buffer, then this.
            #[cfg(not(target_arch = "wasm32"))]
            #[export_name = "vox_native_buffer"]
            pub extern "C" fn vox_native_buffer() -> *mut i16 {
                BUFFER.as_mut_ptr()
            }

            #[export_name = "vox_init"]
            pub extern "C" fn vox_init(config_len: i32) -> i32 {
                RUNTIME.init(&BUFFER, config_len)
            }

            #[export_name = "vox_rate"]
            pub extern "C" fn vox_rate(input_rate: i32) -> i32 {
                RUNTIME.rate(&BUFFER, input_rate)
            }

            #[export_name = "vox_event"]
            pub extern "C" fn vox_event(kind: i32, arg: i32) -> i32 {
                RUNTIME.event(&BUFFER, kind, arg)
            }

            #[export_name = "vox_process"]
            pub extern "C" fn vox_process(samples: i32) -> i32 {
                RUNTIME.process(&BUFFER, samples)
            }

            $(
                pub static REFERENCE: $crate::__rt::Buffer<{ ($bytes) / 2 }> = $crate::__rt::Buffer::new();

                #[export_name = "vox_reference"]
                pub extern "C" fn $reference(capacity_bytes: i32) -> i32 {
                    REFERENCE.address(capacity_bytes)
                }
            )?
        }
    };
}

/// The machinery behind [`plugin!`]; not a stable API.
#[doc(hidden)]
pub mod __rt {
    use super::*;
    use core::cell::UnsafeCell;

    /// The frame buffer: `N` samples, 16-byte aligned. A static of its own,
    /// all zeros, so that it costs no bytes in the module (a zero-filled
    /// static lands in .bss, which wasm-ld leaves out of the data section).
    #[repr(C, align(16))]
    pub struct Buffer<const N: usize>(UnsafeCell<[i16; N]>);

    /// The plugin instance and the capacity the host asked for.
    pub struct Runtime<P> {
        inner: UnsafeCell<Inner<P>>,
    }

    struct Inner<P> {
        /// Capacity the host asked for, in bytes (0: vox_buffer not called yet).
        cap: usize,
        plugin: Option<P>,
    }

    // SAFETY: a wasm32 module without threads has one thread, and the ABI
    // guarantees that the host's calls are strictly sequential and never
    // re-entrant (host functions never call back), so each export takes the
    // one `&mut` to the buffer and to the plugin at entry and drops them
    // before it returns.
    unsafe impl<const N: usize> Sync for Buffer<N> {}
    unsafe impl<P> Sync for Runtime<P> {}

    impl<const N: usize> Buffer<N> {
        /// A zeroed buffer, for a `static`.
        #[allow(clippy::new_without_default)]
        pub const fn new() -> Self {
            Buffer(UnsafeCell::new([0; N]))
        }

        /// `vox_reference`: the buffer's address if `capacity_bytes` fits, else 0.
        pub fn address(&'static self, capacity_bytes: i32) -> i32 {
            if capacity_bytes < 0 || capacity_bytes as usize > N * SAMPLE_BYTES {
                return 0;
            }
            self.get().as_ptr() as i32
        }

        /// The first sample, for a program the plugin is linked into natively.
        pub fn as_mut_ptr(&'static self) -> *mut i16 {
            self.0.get() as *mut i16
        }

        /// The first `len` samples (at most `N`), for reading.
        pub fn head(&'static self, len: usize) -> &'static [i16] {
            &self.get()[..len.min(N)]
        }

        #[allow(clippy::mut_from_ref)]
        #[inline(always)]
        fn get(&self) -> &mut [i16; N] {
            // SAFETY: see the Sync impls.
            unsafe { &mut *self.0.get() }
        }
    }

    impl<P> Runtime<P> {
        /// No plugin yet, for a `static`.
        #[allow(clippy::new_without_default)]
        pub const fn new() -> Self {
            Runtime { inner: UnsafeCell::new(Inner { cap: 0, plugin: None }) }
        }
    }

    impl<P: Plugin> Runtime<P> {
        #[allow(clippy::mut_from_ref)]
        #[inline(always)]
        fn inner(&self) -> &mut Inner<P> {
            // SAFETY: see the Sync impls.
            unsafe { &mut *self.inner.get() }
        }

        /// `vox_buffer`: the buffer's address, or 0 if `capacity` does not fit.
        pub fn buffer<const N: usize>(&self, buf: &Buffer<N>, capacity: i32, new: fn() -> P) -> i32 {
            let inner = self.inner();
            if capacity < 0 || capacity as usize > N * SAMPLE_BYTES {
                return 0;
            }
            if inner.plugin.is_none() {
                inner.plugin = Some(new());
            }
            inner.cap = inner.cap.max(capacity as usize);
            buf.0.get() as usize as i32
        }

        /// The plugin and the first `cap` bytes of the buffer, as samples.
        #[inline(always)]
        fn parts<'a, const N: usize>(&'a self, buf: &'a Buffer<N>) -> Option<(&'a mut P, &'a mut [i16])> {
            let inner = self.inner();
            // cap <= N * 2 (checked by buffer), so the slice never panics.
            let cap = inner.cap / SAMPLE_BYTES;
            match inner.plugin.as_mut() {
                Some(p) => Some((p, &mut buf.get()[..cap])),
                None => None,
            }
        }

        /// `vox_init`.
        pub fn init<const N: usize>(&self, buf: &Buffer<N>, len: i32) -> i32 {
            let (plugin, samples) = match self.parts(buf) {
                Some(x) => x,
                None => return STATUS_BAD_STATE,
            };
            if len < 0 || len as usize > samples.len() * SAMPLE_BYTES {
                return STATUS_BAD_CONFIG;
            }
            // SAFETY: len bytes lie inside the buffer's capacity.
            let bytes = unsafe { core::slice::from_raw_parts(samples.as_ptr() as *const u8, len as usize) };
            match plugin.init(&Config::new(bytes)) {
                Ok(()) => STATUS_OK,
                Err(s) => s.code(),
            }
        }

        /// `vox_rate`.
        pub fn rate<const N: usize>(&self, buf: &Buffer<N>, input_rate: i32) -> i32 {
            let (plugin, _) = match self.parts(buf) {
                Some(x) => x,
                None => return STATUS_BAD_STATE,
            };
            if input_rate <= 0 {
                return STATUS_BAD_RATE;
            }
            match plugin.rate(input_rate as u32) {
                Ok(out) if out <= i32::MAX as u32 => out as i32,
                Ok(_) => STATUS_BAD_RATE,
                Err(s) => s.code(),
            }
        }

        /// `vox_process`.
        pub fn process<const N: usize>(&self, buf: &Buffer<N>, samples: i32) -> i32 {
            let (plugin, buf) = match self.parts(buf) {
                Some(x) => x,
                None => return STATUS_BAD_STATE,
            };
            if samples <= 0 || samples as usize > buf.len() {
                return STATUS_BAD_LENGTH;
            }
            let mut frame = Frame { buf, len: samples as usize };
            match plugin.process_frame(&mut frame) {
                Ok(n) if n <= i32::MAX as usize => n as i32,
                Ok(_) => STATUS_BAD_LENGTH,
                Err(s) => s.code(),
            }
        }

        /// `vox_event`.
        pub fn event<const N: usize>(&self, buf: &Buffer<N>, kind: i32, arg: i32) -> i32 {
            let (plugin, buf) = match self.parts(buf) {
                Some(x) => x,
                None => return STATUS_BAD_STATE,
            };
            let event = match kind {
                EVENT_CALL_START => {
                    if arg < 0 || arg as usize > buf.len() * SAMPLE_BYTES {
                        return STATUS_BAD_STATE;
                    }
                    // SAFETY: arg bytes lie inside the buffer's capacity.
                    Event::CallStart(unsafe { core::slice::from_raw_parts(buf.as_ptr() as *const u8, arg as usize) })
                }
                EVENT_CALL_END => Event::CallEnd,
                EVENT_DTMF => match char::from_u32(arg as u32) {
                    Some(c) => Event::Dtmf(c),
                    None => Event::Unknown(kind, arg),
                },
                EVENT_CLEAR => Event::Clear,
                EVENT_FLUSH => Event::Flush(buf),
                _ => Event::Unknown(kind, arg),
            };
            plugin.on_event(event)
        }
    }
}

/// Turns a panic into a trap, which the host reports as
/// "trap in EXPORT: unreachable" and handles as a fault of the plugin.
#[cfg(all(feature = "panic-handler", target_arch = "wasm32", not(test)))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

//! tremolo — the example plugin of every voxhost SDK, in Rust (examples/TREMOLO.md).
//!
//! The gain swells and dips `rate_hz` times a second, by up to `depth` of
//! full scale. The LFO is a 32-bit phase accumulator read as a triangle, and
//! all per-sample arithmetic is integer, so every language's build produces
//! the same bits. The key `#` toggles the effect; every key is reported to
//! the client as the event `tremolo.key`.
//!
//! Config: `{"rate_hz": 4, "depth": 0.5}` (the defaults; 0.1..20 Hz, 0..1).
//! Build:  `make` (see the Makefile: Debian's rustc 1.63 or rustup, one page)
//! Try:    `go run ./cmd/voxhost run --pipeline "examples/rust/build/tremolo.wasm rate_hz=5 depth=0.8" in.wav out.wav`
#![no_std]

use voxhost::{round_half_up, Config, Event, Plugin, Status, StrBuf};

struct Tremolo {
    /// LFO frequency in Hz, set by `init`.
    rate_hz: f64,
    /// How far the gain dips, in Q16 (65536 = to silence).
    depth_q16: i32,
    /// Phase step per sample, set by `rate`.
    inc: u32,
    /// LFO phase, wraps modulo 2^32.
    phase: u32,
    /// `#` toggles it.
    enabled: bool,
}

impl Tremolo {
    const fn new() -> Self {
        // depth_q16 = floor(0.5 * 65536 + 0.5)
        Tremolo { rate_hz: 4.0, depth_q16: 32768, inc: 0, phase: 0, enabled: true }
    }
}

impl Plugin for Tremolo {
    fn init(&mut self, config: &Config) -> Result<(), Status> {
        // number_or: the default if absent, None if not a number. The range
        // tests are written so that NaN fails them too.
        let rate_hz = match config.number_or("rate_hz", 4.0) {
            Some(x) if x >= 0.1 && x <= 20.0 => x,
            _ => {
                voxhost::error("tremolo: \"rate_hz\" must be a number from 0.1 to 20");
                return Err(Status::BAD_CONFIG);
            }
        };
        let depth = match config.number_or("depth", 0.5) {
            Some(x) if x >= 0.0 && x <= 1.0 => x,
            _ => {
                voxhost::error("tremolo: \"depth\" must be a number from 0 to 1");
                return Err(Status::BAD_CONFIG);
            }
        };
        self.rate_hz = rate_hz;
        self.depth_q16 = round_half_up(depth * 65536.0) as i32; // floor(depth * 65536.0 + 0.5)
        Ok(())
    }

    fn rate(&mut self, input_rate: u32) -> Result<u32, Status> {
        if !(8000..=48000).contains(&input_rate) {
            voxhost::error("tremolo: the input rate must lie between 8000 and 48000 Hz");
            return Err(Status::BAD_RATE);
        }
        // floor(rate_hz * 4294967296.0 / (double) input_rate + 0.5)
        self.inc = round_half_up(self.rate_hz * 4294967296.0 / input_rate as f64) as u32;
        Ok(input_rate) // the rate does not change
    }

    fn process(&mut self, samples: &mut [i16]) -> usize {
        let mut phase = self.phase;
        for s in samples.iter_mut() {
            let p = phase >> 16; // 0 .. 65535
            let tri = if p < 32768 { 2 * p } else { 2 * (65535 - p) }; // 0 .. 65534
            let g = 65536 - ((self.depth_q16 as i64 * tri as i64) >> 16);
            if self.enabled {
                *s = ((*s as i64 * g) >> 16) as i16;
            }
            phase = phase.wrapping_add(self.inc);
        }
        self.phase = phase;
        samples.len()
    }

    fn on_event(&mut self, event: Event) -> i32 {
        if let Event::Dtmf(key) = event {
            if key == '#' {
                self.enabled = !self.enabled;
            }
            let mut data = StrBuf::<40>::new();
            data.push_str("{\"digit\":\"")
                .push_char(key)
                .push_str("\",\"enabled\":")
                .push_bool(self.enabled)
                .push_str("}");
            voxhost::emit("tremolo.key", &data);
        }
        voxhost::STATUS_OK // every other kind: nothing to do
    }
}

voxhost::plugin!(Tremolo, Tremolo::new());

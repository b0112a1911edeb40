//! clipper — the "every SDK feature" example, in Rust (examples/CLIPPER.md).
//!
//! A peak limiter with a 16-sample lookahead: a config with a number, a
//! string and a boolean and no unknown keys, dB both ways, an event with
//! integers and a fixed-point decimal, a DTMF reset, held audio that clear
//! drops and flush releases. A cargo example of the tremolo's crate, built
//! as its own cdylib: `cargo build --release --target wasm32-unknown-unknown
//! --example clipper` (or `make`).
//!
//! Config: `{"threshold_db": -6, "mode": "hard", "report": true}` (the defaults).
#![no_std]

use voxhost::{Config, Event, Plugin, Status, StrBuf};

const HOLD: usize = 16;

struct Clipper {
    threshold: i32,
    soft: bool,
    report: bool,
    clipped: i64,
    peak: i32,
    ring: [i16; HOLD],
    pos: usize,
    held: usize,
}

/// The threshold, in samples, of a level in dBFS.
fn threshold_of(db: f64) -> i32 {
    voxhost::round_half_up(voxhost::FULL_SCALE * voxhost::db_to_gain(db)) as i32
}

fn refuse(why: &str) -> Result<(), Status> {
    voxhost::error(why);
    Err(Status::BAD_CONFIG)
}

impl Clipper {
    const fn new() -> Self {
        Clipper { threshold: 16422, soft: false, report: true, clipped: 0, peak: 0, ring: [0; HOLD], pos: 0, held: 0 }
    }

    fn drop_held(&mut self) {
        self.ring = [0; HOLD];
        self.pos = 0;
        self.held = 0;
    }

    /// clipper.stats {"key":"5","clipped":12,"peak":32768,"peak_dbfs":0.00}; no key is null.
    fn stats(&self, key: Option<char>) {
        let mut data = StrBuf::<96>::new();
        data.push_str("{\"key\":");
        match key {
            Some(k) => data.push_json_str(k.encode_utf8(&mut [0; 4])),
            None => data.push_str("null"),
        };
        data.push_str(",\"clipped\":")
            .push_int(self.clipped)
            .push_str(",\"peak\":")
            .push_int(self.peak as i64)
            .push_str(",\"peak_dbfs\":")
            .push_fixed(voxhost::gain_to_db(self.peak as f64 / voxhost::FULL_SCALE), 2)
            .push_str("}");
        voxhost::emit("clipper.stats", &data);
    }
}

impl Plugin for Clipper {
    fn init(&mut self, config: &Config) -> Result<(), Status> {
        config.check_keys("clipper", &["threshold_db", "mode", "report"])?;
        let db = match config.number_or("threshold_db", -6.0) {
            Some(x) if x >= -60.0 && x <= 0.0 => x,
            Some(_) => return refuse("clipper: \"threshold_db\" must be from -60 to 0"),
            None => return refuse("clipper: \"threshold_db\" must be a number"),
        };
        if config.contains("mode") {
            let mut buf = [0u8; 8];
            self.soft = match config.str_into("mode", &mut buf) {
                Some("hard") => false,
                Some("soft") => true,
                _ => return refuse("clipper: \"mode\" must be \"hard\" or \"soft\""),
            };
        }
        self.report = match config.bool_or("report", true) {
            Some(b) => b,
            None => return refuse("clipper: \"report\" must be true or false"),
        };
        self.threshold = threshold_of(db);
        Ok(())
    }

    fn process(&mut self, samples: &mut [i16]) -> usize {
        for s in samples.iter_mut() {
            let (mut a, mut x) = ((*s as i32).abs(), *s as i32);
            if a > self.peak {
                self.peak = a;
            }
            if a > self.threshold {
                self.clipped += 1;
                a = if self.soft { self.threshold + ((a - self.threshold) >> 2) } else { self.threshold };
                x = if *s < 0 { -a } else { a };
            }
            *s = self.ring[self.pos];
            self.ring[self.pos] = x as i16;
            self.pos = (self.pos + 1) % HOLD;
            self.held = (self.held + 1).min(HOLD);
        }
        samples.len()
    }

    fn on_event(&mut self, event: Event) -> i32 {
        match event {
            Event::Dtmf(key) => {
                if self.report {
                    self.stats(Some(key));
                }
                if key == '*' {
                    self.clipped = 0;
                    self.peak = 0;
                }
                voxhost::STATUS_OK
            }
            Event::Clear => {
                self.drop_held();
                voxhost::STATUS_OK
            }
            Event::Flush(buffer) => {
                let n = self.held;
                for (i, s) in buffer.iter_mut().take(n).enumerate() {
                    *s = self.ring[(self.pos + HOLD - n + i) % HOLD];
                }
                if self.report {
                    self.stats(None);
                }
                self.drop_held();
                n as i32
            }
            _ => voxhost::STATUS_OK,
        }
    }
}

voxhost::plugin!(Clipper, Clipper::new());

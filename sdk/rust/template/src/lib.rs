//! __NAME__: a voxhost plugin in Rust, made by `voxhost plugin new --lang rust`.
//!
//! It changes the volume by `gain_db` decibels and reports every DTMF key as
//! the event `__NAME__.key`. Keep what you need and replace the processing.
//! `voxhost/README.md` documents the SDK.
//!
//! Config: `{"gain_db": -6}` (the default; -60 to 20). Any other key is refused.
//! Build: `make`   Check: `make test`   Hear: `make run CONFIG="gain_db=-12"`
#![no_std]

use voxhost::{Config, Event, Plugin, Status, StrBuf};

struct __TYPE__ {
    /// The gain in Q16 (65536 = 1.0).
    gain_q16: i32,
    /// Samples processed so far.
    samples_seen: i64,
}

/// The gain in Q16 of a level in dB.
fn q16(db: f64) -> i32 {
    voxhost::round_half_up(voxhost::db_to_gain(db) * 65536.0) as i32
}

impl Plugin for __TYPE__ {
    // The config, a JSON object ({} when there is none).
    fn init(&mut self, config: &Config) -> Result<(), Status> {
        // A typo'd key is an error, not silently the default.
        config.check_keys("__NAME__", &["gain_db"])?;
        // number_or: the default if absent, None if not a number. The range
        // test is written so that NaN fails it too.
        let db = match config.number_or("gain_db", -6.0) {
            Some(x) if x >= -60.0 && x <= 20.0 => x,
            _ => {
                voxhost::error("__NAME__: \"gain_db\" must be a number from -60 to 20");
                return Err(Status::BAD_CONFIG);
            }
        };
        self.gain_q16 = q16(db);
        Ok(())
    }

    // One frame, in place; returns the number of samples out (0 swallows it).
    fn process(&mut self, samples: &mut [i16]) -> usize {
        for s in samples.iter_mut() {
            // s * gain, rounded to the nearest sample and saturated to 16 bits.
            *s = voxhost::sat16(((*s as i64 * self.gain_q16 as i64 + 32768) >> 16) as i32);
        }
        self.samples_seen += samples.len() as i64;
        samples.len()
    }

    fn on_event(&mut self, event: Event) -> i32 {
        match event {
            // The event {"key":"5","samples":1200}.
            Event::Dtmf(key) => {
                let mut data = StrBuf::<64>::new();
                data.push_str("{\"key\":")
                    .push_json_str(key.encode_utf8(&mut [0; 4]))
                    .push_str(",\"samples\":")
                    .push_int(self.samples_seen)
                    .push_str("}");
                voxhost::emit("__NAME__.key", &data);
                voxhost::STATUS_OK
            }
            // Barge-in: drop the audio you hold (this plugin holds none).
            Event::Clear => voxhost::STATUS_OK,
            // The input ended: write held samples at the start of the
            // buffer and return their count.
            Event::Flush(_buffer) => 0,
            // Call start and end, and kinds added later: nothing to do.
            _ => voxhost::STATUS_OK,
        }
    }
}

voxhost::plugin!(__TYPE__, __TYPE__ { gain_q16: 65536, samples_seen: 0 });

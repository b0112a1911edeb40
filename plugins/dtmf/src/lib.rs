//! dtmf — the stock voxhost DTMF detector (see README.md).
//!
//! Every 10 ms block of input (rate/100 samples, whatever frame length the
//! host delivers) runs eight Goertzel filters, one per ITU-T Q.23 frequency,
//! and sums the block's energy. The strongest row and column filters pick a
//! candidate key; a least-squares fit of those two sinusoids to the block
//! then measures both tones' amplitudes without the leakage of one into the
//! other's filter, and the share of the block's energy the pair explains.
//! A block names the key if both tones are loud enough, within the twist
//! limits, clear of the other frequencies of their group, and explain most
//! of the block. A key is reported (event `dtmf`, data `"5"`) once per press,
//! as soon as enough consecutive blocks agree; the same key must then drop
//! out for two blocks before it counts again. With `mute` the audio from the
//! detection to the end of the tone is replaced by silence; otherwise it is
//! not touched.
//!
//! The filters run in f32, the energy in integers, the set-up in f64 from
//! basic operations only (no libm): WebAssembly arithmetic is IEEE 754
//! without fused operations, so every host computes the same bits.
#![no_std]

use voxhost::{Config, Event, Plugin, Status, StrBuf};

/// Row (low group) then column (high group) frequencies, Hz (ITU-T Q.23).
const FREQS: [f64; 8] = [697.0, 770.0, 852.0, 941.0, 1209.0, 1336.0, 1477.0, 1633.0];
/// The key at row r, column c is `KEYS[4 * r + c]`.
const KEYS: [u8; 16] = *b"123A456B789C*0#D";
/// No key.
const NONE: u8 = 0;

/// Analysis blocks per second: 10 ms blocks.
const BLOCKS_PER_SECOND: u32 = 100;
/// The row and column tones together must explain at least this fraction
/// of the block's energy. Speech, music and noise spread theirs over many
/// frequencies (harmonics of the tones count against them too); a block the
/// tone only partly fills (its start or end) has a smaller fraction, which
/// is what makes the duration check sharp.
const ENERGY_RATIO: f32 = 0.8;
/// The strongest row (column) filter must have this many times the power of
/// every other row (column): 3 dB. With 10 ms blocks a neighbour 73 Hz away
/// picks up -8 to -12 dB of a tone, about -6 dB at a 1.5% frequency deviation.
const RELATIVE_PEAK: f32 = 2.0;
/// Added to the configured twist limits: the measurement's tolerance. A
/// tone 1.5% off its frequency (which Q.24 requires to pass) reads up to
/// 0.9 dB low in a 10 ms block, and a tone exactly at the limit must pass.
const TWIST_ALLOWANCE_DB: f64 = 1.0;
/// Blocks without the key after which the same key may count again. A
/// drop-out of up to 10 ms touches at most two blocks, so it does not
/// release the key (Q.24: interruptions of 10 ms or less are bridged); a
/// 40 ms pause always spans at least three whole blocks, so it does.
const GAP_BLOCKS: u32 = 3;
/// Largest frequency deviation accepted, as a fraction of the nominal
/// frequency, on either tone: Q.24 requires accepting 1.5% and rejecting
/// 3.5%, and this is the middle. It is measured from the phase each tone
/// advances between consecutive blocks (see `Dtmf::coherent`): a 10 ms block
/// alone cannot tell 697 Hz from 673 Hz (3.5% off): the fit still explains
/// 82% of it.
const MAX_DEVIATION: f64 = 0.025;
/// A full-scale sine: 0 dBFS.
const FULL_SCALE: f64 = 32767.0;

const PI: f64 = core::f64::consts::PI;

struct Dtmf {
    // Configuration.
    /// 1 to mute the tones. (Not a bool: its spare values would let the
    /// SDK's `Option<Dtmf>` start non-zero and put 1.3 KiB of zeros in the
    /// module's data section instead of .bss.)
    mute: u8,
    min_ms: f64,
    /// Largest column/row power ratio (normal twist), linear, allowance included.
    twist: f32,
    /// Largest row/column power ratio (reverse twist), linear, allowance included.
    reverse_twist: f32,
    /// Smallest tone amplitude, in sample units.
    min_amplitude: f64,

    // Derived from the rate.
    /// Samples per block.
    block: u32,
    /// Blocks in a row that must agree on a key.
    need: u32,
    /// 2 cos(w) per filter, w = 2 pi f / rate: the Goertzel recurrence.
    coef: [f32; 8],
    /// cos(w), sin(w), cos(w (N-1)), sin(w (N-1)) per filter: turn the
    /// Goertzel state into the block's inner products with cos(w n), sin(w n).
    rot: [[f32; 4]; 8],
    /// Per key, the inverse of the Gram matrix of the basis
    /// cos(w_r n), sin(w_r n), cos(w_c n), sin(w_c n), n = 0..N-1.
    gram_inv: [[f32; 16]; 16],
    /// min_amplitude^2.
    min_power: f32,
    /// cos(w N), sin(w N) per filter: the phase a tone at the nominal
    /// frequency advances in one block of N samples.
    advance: [[f32; 2]; 8],
    /// cos(d) per filter, d the phase a tone MAX_DEVIATION off the nominal
    /// frequency gains on it in one block (negative when d exceeds pi/2).
    drift_cos: [f32; 8],

    // The block being accumulated.
    s1: [f32; 8],
    s2: [f32; 8],
    energy: i64,
    filled: u32,

    // Key state.
    /// The key the last blocks named, how many in a row whose tones kept
    /// their frequency from block to block, and the last block's fitted
    /// tones (cos and sin coefficients of the row tone, then the column's).
    candidate: u8,
    run: u32,
    fit: [f32; 4],
    /// The key reported and still down, and blocks since it was last seen.
    down: u8,
    missed: u32,
}

impl Dtmf {
    const fn new() -> Self {
        Dtmf {
            mute: 0,
            min_ms: 40.0,
            twist: 1.0,
            reverse_twist: 1.0,
            min_amplitude: 0.0,
            block: 0,
            need: 1,
            coef: [0.0; 8],
            rot: [[0.0; 4]; 8],
            gram_inv: [[0.0; 16]; 16],
            min_power: 0.0,
            advance: [[0.0; 2]; 8],
            drift_cos: [0.0; 8],
            s1: [0.0; 8],
            s2: [0.0; 8],
            energy: 0,
            filled: 0,
            candidate: NONE,
            run: 0,
            fit: [0.0; 4],
            down: NONE,
            missed: 0,
        }
    }

    /// Runs the filters and the energy sum over `xs`, all in one block.
    ///
    /// Two samples a step: s[n] = x[n] + c s[n-1] - s[n-2] and
    /// s[n+1] = x[n+1] + c x[n] + (c^2 - 1) s[n-1] - c s[n-2] both come from
    /// s[n-1] and s[n-2], which halves the latency of the recurrence, and
    /// the eight filters are two lanes of four (wasm SIMD).
    #[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
    fn feed(&mut self, xs: &[i16]) {
        let c = self.coef;
        let mut c2 = [0f32; 8];
        for k in 0..8 {
            c2[k] = c[k] * c[k] - 1.0;
        }
        let mut s1 = self.s1;
        let mut s2 = self.s2;
        let mut energy = 0i64;
        // Four samples (two steps) to one 8-byte load: under wazero every
        // load from linear memory is bounds-checked (RATIONALE.md, "The
        // WebAssembly tax on the stock DSP").
        let quads = xs.chunks_exact(4);
        let rest = quads.remainder();
        for quad in quads {
            // SAFETY: quad is four i16s, eight readable bytes, and
            // read_unaligned needs no alignment. (Assembling the u64 from
            // quad[0..4] is the same value, but LLVM keeps four loads.)
            let q = u64::from_le(unsafe { core::ptr::read_unaligned(quad.as_ptr() as *const u64) });
            for pair in [q as u32, (q >> 32) as u32] {
                let (x0, x1) = (pair as u16 as i16 as i32, (pair >> 16) as u16 as i16 as i32);
                energy += (x0 * x0) as i64 + (x1 * x1) as i64;
                let (f0, f1) = (x0 as f32, x1 as f32);
                for k in 0..8 {
                    let a = (f0 - s2[k]) + c[k] * s1[k];
                    let b = (f1 + c[k] * (f0 - s2[k])) + c2[k] * s1[k];
                    s2[k] = a;
                    s1[k] = b;
                }
            }
        }
        let pairs = rest.chunks_exact(2);
        let rest = pairs.remainder();
        for pair in pairs {
            let (x0, x1) = (pair[0] as i32, pair[1] as i32);
            energy += (x0 * x0) as i64 + (x1 * x1) as i64;
            let (f0, f1) = (x0 as f32, x1 as f32);
            for k in 0..8 {
                let a = (f0 - s2[k]) + c[k] * s1[k];
                let b = (f1 + c[k] * (f0 - s2[k])) + c2[k] * s1[k];
                s2[k] = a;
                s1[k] = b;
            }
        }
        for &x in rest {
            let xi = x as i32;
            energy += (xi * xi) as i64;
            let xf = xi as f32;
            for k in 0..8 {
                let s = (xf - s2[k]) + c[k] * s1[k];
                s2[k] = s1[k];
                s1[k] = s;
            }
        }
        self.s1 = s1;
        self.s2 = s2;
        self.energy += energy;
    }

    /// The block's inner products with cos(w n) and sin(w n) of filter k.
    #[inline(always)]
    fn inner(&self, k: usize) -> (f32, f32) {
        // s1 - e^{-jw} s2 = u + jv is e^{jw(N-1)} X(w), X(w) = C - jS.
        let [cw, sw, cp, sp] = self.rot[k];
        let u = self.s1[k] - cw * self.s2[k];
        let v = sw * self.s2[k];
        (u * cp + v * sp, u * sp - v * cp)
    }

    /// Ends the block: the key it names, if any, with its two fitted tones,
    /// and a fresh block.
    fn classify(&mut self) -> (u8, [f32; 4]) {
        let judged = self.judge();
        self.s1 = [0.0; 8];
        self.s2 = [0.0; 8];
        self.energy = 0;
        self.filled = 0;
        judged
    }

    fn judge(&self) -> (u8, [f32; 4]) {
        const NO_KEY: (u8, [f32; 4]) = (NONE, [0.0; 4]);
        let mut p = [0f32; 8];
        for k in 0..8 {
            let (a, b) = (self.s1[k], self.s2[k]);
            p[k] = a * a + b * b - self.coef[k] * a * b; // |X_k|^2
        }
        let (row, col) = (strongest(&p[..4]), strongest(&p[4..]));
        // Relative peak within each group.
        let (pr, pc) = (p[row], p[4 + col]);
        for k in 0..4 {
            if (k != row && p[k] * RELATIVE_PEAK > pr) || (k != col && p[4 + k] * RELATIVE_PEAK > pc) {
                return NO_KEY;
            }
        }
        // Least-squares fit of the two tones: theta = G^-1 b, where b are the
        // inner products of the block with the basis.
        let (cr, sr) = self.inner(row);
        let (cc, sc) = self.inner(4 + col);
        let b = [cr, sr, cc, sc];
        let g = &self.gram_inv[4 * row + col];
        let mut t = [0f32; 4];
        for i in 0..4 {
            t[i] = g[4 * i] * b[0] + g[4 * i + 1] * b[1] + g[4 * i + 2] * b[2] + g[4 * i + 3] * b[3];
        }
        let ar = t[0] * t[0] + t[1] * t[1]; // row tone amplitude^2
        let ac = t[2] * t[2] + t[3] * t[3]; // column tone amplitude^2
        // Minimum level of each tone (and so of the signal).
        if !(ar >= self.min_power && ac >= self.min_power) {
            return NO_KEY;
        }
        // Twist: normal (high group louder) and reverse (low group louder).
        if ac > self.twist * ar || ar > self.reverse_twist * ac {
            return NO_KEY;
        }
        // The energy the two tones explain, against the block's.
        let fitted = t[0] * b[0] + t[1] * b[1] + t[2] * b[2] + t[3] * b[3];
        if fitted < ENERGY_RATIO * self.energy as f32 {
            return NO_KEY;
        }
        (KEYS[4 * row + col], t)
    }

    /// Whether both tones of `key`, fitted as `fit` in this block and as
    /// `self.fit` in the one before, kept their frequency within
    /// MAX_DEVIATION: a tone at w + e advances e N more than the nominal w N
    /// from one block to the next, and the fit's complex amplitude
    /// a - jb (for a cos + b sin) turns by exactly that.
    fn coherent(&self, key: u8, fit: &[f32; 4]) -> bool {
        let index = KEYS.iter().position(|&k| k == key).unwrap_or(0);
        let (row, col) = (index / 4, 4 + index % 4);
        self.tone_coherent(row, fit[0], fit[1], self.fit[0], self.fit[1])
            && self.tone_coherent(col, fit[2], fit[3], self.fit[2], self.fit[3])
    }

    /// Whether the tone of filter k, (a, b) now and (pa, pb) a block
    /// before, drifted by at most the allowed phase: with z = A conj(P)
    /// e^{-jwN} (A = a - jb, P = pa - jpb), cos(arg z) >= cos(d), tested on
    /// squares since core has no sqrt: |z|^2 = |A|^2 |P|^2.
    #[inline(always)]
    fn tone_coherent(&self, k: usize, a: f32, b: f32, pa: f32, pb: f32) -> bool {
        let (zr, zi) = (a * pa + b * pb, a * pb - b * pa);
        let [cn, sn] = self.advance[k];
        let re = zr * cn + zi * sn;
        let bound = self.drift_cos[k] * self.drift_cos[k] * (a * a + b * b) * (pa * pa + pb * pb);
        if self.drift_cos[k] < 0.0 {
            re >= 0.0 || re * re <= bound // cos(d) < 0
        } else {
            re > 0.0 && re * re >= bound
        }
    }

    /// Advances the key state by one block that named `key` (or NONE) with
    /// the fitted tones `fit`.
    fn step(&mut self, key: u8, fit: [f32; 4]) {
        // A run is of blocks that name the same key with its tones coherent
        // from each block to the next: a tone off its nominal frequency
        // starts a new run at every block and never counts.
        if key == self.candidate && (key == NONE || self.coherent(key, &fit)) {
            self.run = self.run.saturating_add(1);
        } else {
            self.candidate = key;
            self.run = 1;
        }
        self.fit = fit;
        if self.down != NONE {
            if key == self.down {
                self.missed = 0;
            } else {
                self.missed += 1;
                if self.missed >= GAP_BLOCKS {
                    self.down = NONE;
                }
            }
        }
        if self.down == NONE && key != NONE && self.run >= self.need {
            self.down = key;
            self.missed = 0;
            let mut data = StrBuf::<4>::new();
            data.push_str("\"").push_char(key as char).push_str("\"");
            voxhost::emit(voxhost::EMIT_DTMF, &data);
        }
    }
}

/// Index of the largest of the powers (the first on a tie).
#[inline(always)]
fn strongest(p: &[f32]) -> usize {
    let mut best = 0;
    for k in 1..p.len() {
        if p[k] > p[best] {
            best = k;
        }
    }
    best
}

impl Plugin for Dtmf {
    fn init(&mut self, config: &Config) -> Result<(), Status> {
        let mute = match config.bool_or("mute", false) {
            Some(b) => b,
            None => return bad("dtmf: \"mute\" must be true or false"),
        };
        let min_ms = match config.number_or("min_ms", 40.0) {
            Some(x) if x >= 10.0 && x <= 1000.0 => x,
            _ => return bad("dtmf: \"min_ms\" must be a number from 10 to 1000"),
        };
        let twist_db = match config.number_or("twist_db", 8.0) {
            Some(x) if x >= 0.0 && x <= 20.0 => x,
            _ => return bad("dtmf: \"twist_db\" must be a number from 0 to 20"),
        };
        let reverse_db = match config.number_or("reverse_twist_db", 4.0) {
            Some(x) if x >= 0.0 && x <= 20.0 => x,
            _ => return bad("dtmf: \"reverse_twist_db\" must be a number from 0 to 20"),
        };
        let threshold_db = match config.number_or("threshold_db", -30.0) {
            Some(x) if x >= -90.0 && x <= 0.0 => x,
            _ => return bad("dtmf: \"threshold_db\" must be a number from -90 to 0"),
        };
        self.mute = mute as u8;
        self.min_ms = min_ms;
        self.twist = pow10((twist_db + TWIST_ALLOWANCE_DB) / 10.0) as f32;
        self.reverse_twist = pow10((reverse_db + TWIST_ALLOWANCE_DB) / 10.0) as f32;
        self.min_amplitude = FULL_SCALE * pow10(threshold_db / 20.0);
        Ok(())
    }

    fn rate(&mut self, input_rate: u32) -> Result<u32, Status> {
        if !(8000..=48000).contains(&input_rate) {
            voxhost::error("dtmf: the input rate must lie between 8000 and 48000 Hz");
            return Err(Status::BAD_RATE);
        }
        let rate = input_rate as f64;
        // Blocks of 10 ms, rounded to whole samples.
        let block = (input_rate + BLOCKS_PER_SECOND / 2) / BLOCKS_PER_SECOND;
        let n = block as f64;
        let mut w = [0f64; 8];
        for k in 0..8 {
            w[k] = 2.0 * PI * FREQS[k] / rate;
            let (c, s) = cos_sin(w[k]);
            let (cp, sp) = cos_sin(w[k] * (n - 1.0));
            self.coef[k] = (2.0 * c) as f32;
            self.rot[k] = [c as f32, s as f32, cp as f32, sp as f32];
            let (ca, sa) = cos_sin(w[k] * n);
            self.advance[k] = [ca as f32, sa as f32];
            let (cd, _) = cos_sin(w[k] * n * MAX_DEVIATION);
            self.drift_cos[k] = cd as f32;
        }
        for r in 0..4 {
            for c in 0..4 {
                self.gram_inv[4 * r + c] = gram_inverse(w[r], w[4 + c], n);
            }
        }
        // A tone of min_ms contains at least floor(min_ms / 10 ms) - 1 whole
        // blocks however it falls on them; require that many in a row.
        let whole = (self.min_ms * rate / 1000.0 / n) as u32; // floor: positive
        self.need = whole.saturating_sub(1).max(1);
        self.min_power = (self.min_amplitude * self.min_amplitude) as f32;
        self.block = block;
        // The call starts here, with no block or key under way: a no-op in
        // a fresh instance, and what lets the build internal/nativeplugin
        // compiles for the host (its state lives as long as the process)
        // start a call again.
        self.s1 = [0.0; 8];
        self.s2 = [0.0; 8];
        self.energy = 0;
        self.filled = 0;
        self.candidate = NONE;
        self.run = 0;
        self.fit = [0.0; 4];
        self.down = NONE;
        self.missed = 0;
        Ok(input_rate)
    }

    fn process(&mut self, samples: &mut [i16]) -> usize {
        if self.block == 0 {
            // The host skipped vox_rate, which the ABI does not allow; take
            // the telephony rate rather than loop on empty blocks.
            let _ = self.rate(voxhost::TELEPHONY_RATE);
        }
        let n = samples.len();
        let mut i = 0;
        while i < n {
            let take = (n - i).min((self.block - self.filled) as usize);
            let chunk = &mut samples[i..i + take];
            self.feed(chunk);
            if self.mute != 0 && self.down != NONE {
                for s in chunk.iter_mut() {
                    *s = 0;
                }
            }
            self.filled += take as u32;
            if self.filled == self.block {
                let (key, fit) = self.classify();
                self.step(key, fit);
            }
            i += take;
        }
        n
    }

    fn on_event(&mut self, event: Event) -> i32 {
        // Nothing is held: every event, known or not, succeeds.
        let _ = event;
        voxhost::STATUS_OK
    }
}

fn bad(msg: &str) -> Result<(), Status> {
    voxhost::error(msg);
    Err(Status::BAD_CONFIG)
}

/// sum_{n=0}^{N-1} e^{j theta n}, as (real, imaginary).
fn dirichlet(theta: f64, n: f64) -> (f64, f64) {
    let (_, half) = cos_sin(theta / 2.0);
    if half == 0.0 {
        return (n, 0.0);
    }
    let (_, top) = cos_sin(n * theta / 2.0);
    let (c, s) = cos_sin(theta * (n - 1.0) / 2.0);
    let m = top / half;
    (c * m, s * m)
}

/// The inverse of the Gram matrix of cos(a n), sin(a n), cos(b n), sin(b n)
/// over n = 0..N-1, row-major.
fn gram_inverse(a: f64, b: f64, n: f64) -> [f32; 16] {
    let (a2c, a2s) = dirichlet(2.0 * a, n);
    let (b2c, b2s) = dirichlet(2.0 * b, n);
    let (dc, ds) = dirichlet(a - b, n);
    let (sc, ss) = dirichlet(a + b, n);
    let m = [
        [(n + a2c) / 2.0, a2s / 2.0, (dc + sc) / 2.0, (ss - ds) / 2.0],
        [a2s / 2.0, (n - a2c) / 2.0, (ss + ds) / 2.0, (dc - sc) / 2.0],
        [(dc + sc) / 2.0, (ss + ds) / 2.0, (n + b2c) / 2.0, b2s / 2.0],
        [(ss - ds) / 2.0, (dc - sc) / 2.0, b2s / 2.0, (n - b2c) / 2.0],
    ];
    // Gauss-Jordan with partial pivoting; the matrix is close to N/2 times
    // the identity, far from singular.
    let mut aug = [[0f64; 8]; 4];
    for i in 0..4 {
        aug[i][..4].copy_from_slice(&m[i]);
        aug[i][4 + i] = 1.0;
    }
    for col in 0..4 {
        let mut piv = col;
        for r in col + 1..4 {
            if abs(aug[r][col]) > abs(aug[piv][col]) {
                piv = r;
            }
        }
        aug.swap(col, piv);
        let d = aug[col][col];
        for j in 0..8 {
            aug[col][j] /= d;
        }
        for r in 0..4 {
            if r != col {
                let f = aug[r][col];
                for j in 0..8 {
                    aug[r][j] -= f * aug[col][j];
                }
            }
        }
    }
    let mut out = [0f32; 16];
    for i in 0..4 {
        for j in 0..4 {
            out[4 * i + j] = aug[i][4 + j] as f32;
        }
    }
    out
}

fn abs(x: f64) -> f64 {
    if x < 0.0 {
        -x
    } else {
        x
    }
}

/// 10^x, for |x| <= 10, from basic IEEE operations only (no libm in core):
/// e^y = (e^(y/1024))^1024 with a Taylor series for the small power.
fn pow10(x: f64) -> f64 {
    let y = x * core::f64::consts::LN_10 / 1024.0;
    let (mut sum, mut term) = (1.0f64, 1.0f64);
    for k in 1..12 {
        term *= y / k as f64;
        sum += term;
    }
    for _ in 0..10 {
        sum *= sum;
    }
    sum
}

/// (cos x, sin x) for |x| up to a few thousand, from basic IEEE operations
/// only: x is reduced to [-pi, pi], then Taylor series to the x^33 term
/// (below 1e-19 there).
fn cos_sin(x: f64) -> (f64, f64) {
    let x = x - 2.0 * PI * voxhost::floor(x / (2.0 * PI) + 0.5);
    let x2 = x * x;
    let (mut c, mut s) = (1.0f64, x);
    let (mut tc, mut ts) = (1.0f64, x);
    let mut k = 2.0f64;
    while k <= 32.0 {
        tc *= -x2 / (k * (k - 1.0));
        ts *= -x2 / (k * (k + 1.0));
        c += tc;
        s += ts;
        k += 2.0;
    }
    (c, s)
}

voxhost::plugin!(Dtmf, Dtmf::new());

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn maths() {
        for x in [0.0, 0.5, 1.0, 3.0, -2.5, 3.141592653589793, 101.7, -2999.0] {
            let (c, s) = cos_sin(x);
            assert!((c - x.cos()).abs() < 1e-12 && (s - x.sin()).abs() < 1e-12, "cos_sin({}) = {} {}", x, c, s);
        }
        assert!((pow10(0.8) - 6.309573444801933).abs() < 1e-9);
        assert!((pow10(-1.5) - 0.031622776601683794).abs() < 1e-12);
        let (a, b, n) = (0.4, 1.1, 80.0);
        let (dc, ds) = dirichlet(a, n);
        let (wc, ws) = (0..80).fold((0.0, 0.0), |(c, s), i| (c + (a * i as f64).cos(), s + (a * i as f64).sin()));
        assert!((dc - wc).abs() < 1e-9 && (ds - ws).abs() < 1e-9);
        // G^-1 b recovers the amplitudes of two tones exactly.
        let g = gram_inverse(a, b, n);
        let x: std::vec::Vec<f64> =
            (0..80).map(|i| 3.0 * (a * i as f64 + 0.3).cos() + 2.0 * (b * i as f64 - 1.0).cos()).collect();
        let mut bv = [0f64; 4];
        for (i, v) in x.iter().enumerate() {
            let t = i as f64;
            bv[0] += v * (a * t).cos();
            bv[1] += v * (a * t).sin();
            bv[2] += v * (b * t).cos();
            bv[3] += v * (b * t).sin();
        }
        let th: std::vec::Vec<f64> = (0..4).map(|i| (0..4).map(|j| g[4 * i + j] as f64 * bv[j]).sum()).collect();
        assert!(((th[0] * th[0] + th[1] * th[1]).sqrt() - 3.0).abs() < 1e-4, "{:?}", th);
        assert!(((th[2] * th[2] + th[3] * th[3]).sqrt() - 2.0).abs() < 1e-4, "{:?}", th);
    }

    #[test]
    fn inner_products() {
        let mut d = Dtmf::new();
        d.init(&Config::new(b"{}")).unwrap();
        d.rate(8000).unwrap();
        let x: std::vec::Vec<i16> = (0..80).map(|i| ((i * 7919) % 2001) as i16 - 1000).collect();
        d.feed(&x);
        for k in 0..8 {
            let w = 2.0 * PI * FREQS[k] / 8000.0;
            let (mut c, mut s) = (0.0, 0.0);
            for (i, v) in x.iter().enumerate() {
                c += *v as f64 * (w * i as f64).cos();
                s += *v as f64 * (w * i as f64).sin();
            }
            let (gc, gs) = d.inner(k);
            assert!((gc as f64 - c).abs() < 1.0 && (gs as f64 - s).abs() < 1.0, "{}: {} {} vs {} {}", k, gc, gs, c, s);
        }
    }
}

// The console's microphone capture, as an AudioWorklet processor: it
// resamples the context's audio to the call's rate with a Kaiser-windowed
// sinc (anti-aliasing below the new Nyquist frequency) and posts 20 ms
// frames of PCM16 samples (an Int16Array's buffer, transferred) to the page.
//
// processorOptions: {rate: 8000 | 16000 | 24000}.

const ZERO_CROSSINGS = 16; // each side of a tap, in output samples
const PHASES = 512; // table entries per input sample
const BETA = 8.6; // Kaiser window: about 90 dB stop band
const PASS = 0.475; // cut-off, as a share of the output rate

function bessel0(x) {
  let sum = 1, term = 1;
  for (let k = 1; k < 40; k++) {
    term *= (x / (2 * k)) * (x / (2 * k));
    sum += term;
    if (term < 1e-12 * sum) break;
  }
  return sum;
}

// kernel tabulates the low-pass filter h(d), d in input samples from the
// output instant, at PHASES points per input sample over |d| < half.
function kernel(inRate, outRate) {
  const cutoff = Math.min(1, outRate / inRate) * PASS * 2; // cycles per input sample, times 2
  const half = Math.ceil(ZERO_CROSSINGS / cutoff);
  const table = new Float32Array(half * PHASES + 2);
  const norm = bessel0(BETA);
  for (let i = 0; i < table.length; i++) {
    const d = i / PHASES;
    if (d >= half) continue;
    const x = Math.PI * cutoff * d;
    const sinc = d === 0 ? 1 : Math.sin(x) / x;
    const r = d / half;
    table[i] = cutoff * sinc * bessel0(BETA * Math.sqrt(1 - r * r)) / norm;
  }
  return {table, half};
}

class Capture extends AudioWorkletProcessor {
  constructor(options) {
    super();
    this.outRate = options.processorOptions.rate;
    this.step = sampleRate / this.outRate; // input samples per output sample
    const {table, half} = kernel(sampleRate, this.outRate);
    this.table = table;
    this.half = half;
    // history holds input samples from absolute index base on.
    this.history = new Float32Array(1 << 16);
    this.length = 0;
    this.base = 0;
    this.next = 0; // the next output instant, in absolute input samples
    this.frameLen = this.outRate / 50;
    this.frame = new Int16Array(this.frameLen);
    this.filled = 0;
    this.stopped = false;
    this.port.onmessage = (e) => {
      if (e.data === 'stop') this.stopped = true;
    };
  }

  push(samples) {
    if (this.length + samples.length > this.history.length) {
      // Drop what no output instant can reach any more.
      const keep = Math.floor(this.next) - this.half - 1 - this.base;
      if (keep > 0) {
        this.history.copyWithin(0, keep, this.length);
        this.length -= keep;
        this.base += keep;
      }
      if (this.length + samples.length > this.history.length) {
        const bigger = new Float32Array(2 * (this.length + samples.length));
        bigger.set(this.history.subarray(0, this.length));
        this.history = bigger;
      }
    }
    this.history.set(samples, this.length);
    this.length += samples.length;
  }

  process(inputs) {
    if (this.stopped) return false;
    const input = inputs[0];
    if (!input || input.length === 0) return true;
    this.push(input[0]);
    const end = this.base + this.length;
    const {table, half, history} = this;
    while (this.next + half < end) {
      const t = this.next;
      const first = Math.max(Math.ceil(t - half), this.base);
      const last = Math.floor(t + half);
      let acc = 0;
      for (let n = first; n <= last; n++) {
        const pos = Math.abs(n - t) * PHASES;
        const i = pos | 0;
        const f = pos - i;
        acc += history[n - this.base] * (table[i] + (table[i + 1] - table[i]) * f);
      }
      let s = Math.round(acc * 32768);
      if (s > 32767) s = 32767;
      else if (s < -32768) s = -32768;
      this.frame[this.filled++] = s;
      if (this.filled === this.frameLen) {
        const out = this.frame;
        this.port.postMessage(out.buffer, [out.buffer]);
        this.frame = new Int16Array(this.frameLen);
        this.filled = 0;
      }
      this.next += this.step;
    }
    return true;
  }
}

registerProcessor('voxhost-capture', Capture);

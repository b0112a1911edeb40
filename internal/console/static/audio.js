// Audio helpers of the console: G.711 μ-law, PCM16LE, WAV files, base64,
// and the FFT behind the spectrograms.

// encodeUlaw encodes PCM16 samples as G.711 μ-law bytes (ITU-T G.711: bias
// 0x84, clipped at 32635), as the host's codec does.
export function encodeUlaw(samples) {
  const out = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    let s = samples[i];
    const sign = s < 0 ? 0x80 : 0;
    if (s < 0) s = -s;
    if (s > 32635) s = 32635;
    s += 0x84;
    let exp = 7;
    for (let mask = 0x4000; (s & mask) === 0 && exp > 0; mask >>= 1) exp--;
    const mantissa = (s >> (exp + 3)) & 0x0f;
    out[i] = ~(sign | (exp << 4) | mantissa) & 0xff;
  }
  return out;
}

const ULAW = new Int16Array(256);
for (let i = 0; i < 256; i++) {
  const u = ~i & 0xff;
  const exp = (u >> 4) & 7;
  const mag = (((u & 0x0f) << 3) + 0x84) << exp;
  ULAW[i] = u & 0x80 ? 0x84 - mag : mag - 0x84;
}

// decodeUlaw decodes G.711 μ-law bytes into PCM16 samples.
export function decodeUlaw(bytes) {
  const out = new Int16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = ULAW[bytes[i]];
  return out;
}

// pcmBytes lays PCM16 samples out little-endian.
export function pcmBytes(samples) {
  const out = new Uint8Array(samples.length * 2);
  const view = new DataView(out.buffer);
  for (let i = 0; i < samples.length; i++) view.setInt16(2 * i, samples[i], true);
  return out;
}

// pcmSamples reads little-endian PCM16 bytes.
export function pcmSamples(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Int16Array(bytes.byteLength >> 1);
  for (let i = 0; i < out.length; i++) out[i] = view.getInt16(2 * i, true);
  return out;
}

// parseWAV reads a PCM16 WAV file: {rate, channels, samples} with the first
// channel's samples, or throws an error that says what the file is.
export function parseWAV(buffer) {
  const view = new DataView(buffer);
  const tag = (off) => String.fromCharCode(...new Uint8Array(buffer, off, 4));
  if (buffer.byteLength < 12 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new Error('not a WAV file');
  let fmt = null;
  for (let off = 12; off + 8 <= buffer.byteLength;) {
    const id = tag(off);
    let size = view.getUint32(off + 4, true);
    const body = off + 8;
    if (id === 'data' && (size === 0xffffffff || body + size > buffer.byteLength)) size = buffer.byteLength - body;
    if (id === 'fmt ') {
      fmt = {format: view.getUint16(body, true), channels: view.getUint16(body + 2, true),
        rate: view.getUint32(body + 4, true), bits: view.getUint16(body + 14, true)};
    } else if (id === 'data') {
      if (!fmt) throw new Error('WAV data before its fmt chunk');
      if (fmt.bits !== 16 || (fmt.format !== 1 && fmt.format !== 0xfffe)) {
        throw new Error(`a ${fmt.bits}-bit WAV file (format ${fmt.format}), not PCM16`);
      }
      const frames = Math.floor(size / (2 * fmt.channels));
      const samples = new Int16Array(frames);
      for (let i = 0; i < frames; i++) samples[i] = view.getInt16(body + 2 * i * fmt.channels, true);
      return {rate: fmt.rate, channels: fmt.channels, samples};
    }
    off = body + size + (size & 1);
  }
  throw new Error('a WAV file without a data chunk');
}

// makeWAV writes PCM16 mono samples as a WAV file.
export function makeWAV(samples, rate) {
  const data = pcmBytes(samples);
  const out = new Uint8Array(44 + data.length);
  const view = new DataView(out.buffer);
  const put = (off, s) => { for (let i = 0; i < 4; i++) out[off + i] = s.charCodeAt(i); };
  put(0, 'RIFF'); view.setUint32(4, 36 + data.length, true); put(8, 'WAVE');
  put(12, 'fmt '); view.setUint32(16, 16, true); view.setUint16(20, 1, true); view.setUint16(22, 1, true);
  view.setUint32(24, rate, true); view.setUint32(28, rate * 2, true); view.setUint16(32, 2, true); view.setUint16(34, 16, true);
  put(36, 'data'); view.setUint32(40, data.length, true);
  out.set(data, 44);
  return out;
}

// toBase64 and fromBase64 convert bytes for JSON.
export function toBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

export function fromBase64(text) {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

// concat joins byte arrays.
export function concat(chunks) {
  let n = 0;
  for (const c of chunks) n += c.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const c of chunks) { out.set(c, off); off += c.length; }
  return out;
}

// fft transforms re and im (length a power of two) in place.
function fft(re, im) {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      [re[i], re[j]] = [re[j], re[i]];
      [im[i], im[j]] = [im[j], im[i]];
    }
  }
  for (let len = 2; len <= n; len <<= 1) {
    const ang = -2 * Math.PI / len;
    for (let i = 0; i < n; i += len) {
      for (let k = 0; k < len / 2; k++) {
        const wr = Math.cos(ang * k), wi = Math.sin(ang * k);
        const a = i + k, b = i + k + len / 2;
        const xr = re[b] * wr - im[b] * wi, xi = re[b] * wi + im[b] * wr;
        re[b] = re[a] - xr; im[b] = im[a] - xi;
        re[a] += xr; im[a] += xi;
      }
    }
  }
}

// spectrogram returns columns of power in dB (relative to a full-scale
// sine) for a Hann-windowed FFT of size n, at most maxColumns columns.
export function spectrogram(samples, n = 256, maxColumns = 1200) {
  const hop = Math.max(n / 4, Math.ceil(samples.length / maxColumns));
  const window = new Float32Array(n);
  let wsum = 0;
  for (let i = 0; i < n; i++) { window[i] = 0.5 - 0.5 * Math.cos(2 * Math.PI * i / n); wsum += window[i]; }
  const columns = [];
  const re = new Float32Array(n), im = new Float32Array(n);
  for (let start = 0; start + n <= Math.max(samples.length, n); start += hop) {
    for (let i = 0; i < n; i++) {
      re[i] = ((samples[start + i] || 0) / 32768) * window[i];
      im[i] = 0;
    }
    fft(re, im);
    const col = new Float32Array(n / 2);
    for (let k = 0; k < n / 2; k++) {
      const mag = Math.hypot(re[k], im[k]) * 2 / wsum;
      col[k] = 20 * Math.log10(mag + 1e-9);
    }
    columns.push(col);
  }
  return {columns, hop};
}

// Drawing for the console: waveforms with event markers, the live
// timeline, spectrograms. Colours come from the page's CSS variables, so
// the drawings follow its light or dark scheme.

function colour(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

// eventStyle is how an event is drawn: its colour and short label.
export function eventStyle(e) {
  switch (e.name) {
    case 'speech_start': return {colour: colour('--speech'), label: '▶ speech'};
    case 'speech_end': return {colour: colour('--speech-end'), label: '■ speech'};
    case 'dtmf': return {colour: colour('--dtmf'), label: 'DTMF ' + (typeof e.data === 'string' ? e.data : '')};
    case 'dtmf_sent': return {colour: colour('--dtmf'), label: 'sent ' + e.data};
    case 'clear': return {colour: colour('--clear'), label: 'clear'};
    case 'plugin_error': return {colour: colour('--error'), label: 'error: ' + (e.plugin || '')};
    case 'mark': return {colour: colour('--muted'), label: 'mark ' + (e.mark || '')};
    default: return {colour: colour('--muted'), label: e.name};
  }
}

// fit sizes a canvas's backing store to its CSS size and the screen's
// pixel ratio, and returns its 2D context scaled to CSS pixels.
export function fit(canvas) {
  const ratio = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(canvas.clientWidth * ratio));
  const h = Math.max(1, Math.round(canvas.clientHeight * ratio));
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
  }
  const g = canvas.getContext('2d');
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  return {g, w: canvas.clientWidth, h: canvas.clientHeight};
}

// lane draws peaks (per column: [min, max] in -1..1) into a band.
function lane(g, peaks, x0, dx, top, height, fill) {
  const mid = top + height / 2;
  g.fillStyle = fill;
  for (let i = 0; i < peaks.length; i++) {
    const p = peaks[i];
    if (!p) continue;
    const y1 = mid - p[1] * height / 2, y2 = mid - p[0] * height / 2;
    g.fillRect(x0 + i * dx, y1, Math.max(dx, 1), Math.max(y2 - y1, 1));
  }
}

function markers(g, events, xOf, top, height, w) {
  g.font = '11px system-ui, sans-serif';
  g.textBaseline = 'top';
  let row = 0, lastX = -1e9;
  for (const e of events) {
    const x = xOf(e.t_ms);
    if (x < -60 || x > w) continue;
    const s = eventStyle(e);
    g.strokeStyle = s.colour;
    g.fillStyle = s.colour;
    g.beginPath();
    g.moveTo(x + 0.5, top);
    g.lineTo(x + 0.5, top + height);
    g.stroke();
    row = x - lastX < 70 ? (row + 1) % 3 : 0;
    lastX = x;
    g.fillText(s.label, x + 3, top + 2 + row * 13);
  }
}

// speechSpans shades the stretches between speech_start and speech_end.
function speechSpans(g, events, xOf, top, height, endMs) {
  g.fillStyle = colour('--speech-bg');
  let start = null;
  for (const e of events) {
    if (e.name === 'speech_start' && start === null) start = e.t_ms;
    if (e.name === 'speech_end' && start !== null) {
      g.fillRect(xOf(start), top, xOf(e.t_ms) - xOf(start), height);
      start = null;
    }
  }
  if (start !== null) g.fillRect(xOf(start), top, xOf(endMs) - xOf(start), height);
}

function axis(g, xOf, fromMs, toMs, y, w) {
  g.fillStyle = colour('--muted');
  g.font = '11px system-ui, sans-serif';
  g.textBaseline = 'bottom';
  const span = toMs - fromMs;
  const tick = span > 60000 ? 10000 : span > 12000 ? 2000 : span > 3000 ? 1000 : 200;
  for (let t = Math.ceil(fromMs / tick) * tick; t <= toMs; t += tick) {
    const x = xOf(t);
    if (x < 0 || x > w) continue;
    g.fillRect(x, y - 4, 1, 4);
    g.fillText((t / 1000).toFixed(tick < 1000 ? 1 : 0) + ' s', x + 2, y);
  }
}

// timeline draws the live call up to nowMs, its audio time: lanes, top
// to bottom, each {peaks, fill, label} with its peaks per 20 ms slot (an
// array indexed by slot), and the events, in a window of windowMs that
// ends at nowMs (the first windowMs of a younger call). A speech span
// still open ends at nowMs; it is shaded on the first lane, where the
// caller's speech is.
export function timeline(canvas, {lanes, events, nowMs, windowMs = 10000}) {
  const {g, w, h} = fit(canvas);
  g.clearRect(0, 0, w, h);
  const fromMs = Math.max(0, nowMs - windowMs);
  const xOf = (t) => (t - fromMs) / windowMs * w;
  const laneH = (h - 20) / lanes.length - 2;
  const first = Math.floor(fromMs / 20);
  const dx = 20 / windowMs * w;
  g.font = '12px system-ui, sans-serif';
  g.textBaseline = 'bottom';
  lanes.forEach((l, i) => {
    const top = i * (laneH + 2);
    g.fillStyle = colour('--lane');
    g.fillRect(0, top, w, laneH);
    if (i === 0) speechSpans(g, events, xOf, 0, laneH, nowMs);
    lane(g, l.peaks.slice(first), xOf(first * 20), dx, top, laneH, colour(l.fill));
  });
  markers(g, events, xOf, 0, lanes.length * (laneH + 2) - 2, w);
  g.fillStyle = colour('--muted');
  lanes.forEach((l, i) => g.fillText(l.label, 4, i * (laneH + 2) + laneH - 2));
  axis(g, xOf, fromMs, fromMs + windowMs, h, w);
}

// peaksOf reduces samples to columns of [min, max] in -1..1.
export function peaksOf(samples, columns) {
  const out = [];
  const per = Math.max(1, samples.length / columns);
  for (let c = 0; c < columns && c * per < samples.length; c++) {
    let lo = 0, hi = 0;
    const end = Math.min(samples.length, Math.floor((c + 1) * per));
    for (let i = Math.floor(c * per); i < end; i++) {
      const v = samples[i] / 32768;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    out.push([lo, hi]);
  }
  return out;
}

// waveform draws a whole file's samples with its events.
export function waveform(canvas, samples, rate, events, fill) {
  const {g, w, h} = fit(canvas);
  g.clearRect(0, 0, w, h);
  const totalMs = Math.max(1, samples.length * 1000 / rate);
  const xOf = (t) => t / totalMs * w;
  g.fillStyle = colour('--lane');
  g.fillRect(0, 0, w, h - 16);
  speechSpans(g, events, xOf, 0, h - 16, totalMs);
  const columns = Math.floor(w);
  lane(g, peaksOf(samples, columns), 0, w / columns, 0, h - 16, colour(fill));
  markers(g, events, xOf, 0, h - 16, w);
  axis(g, xOf, 0, totalMs, h, w);
}

// heat maps 0..1 to a dark-blue-yellow ramp.
function heat(v) {
  const stops = [[13, 8, 135], [126, 3, 168], [204, 71, 120], [248, 149, 64], [240, 249, 33]];
  const x = Math.min(0.9999, Math.max(0, v)) * (stops.length - 1);
  const i = Math.floor(x), f = x - i;
  return stops[i].map((c, k) => Math.round(c + (stops[i + 1][k] - c) * f));
}

// spectrogramImage draws spectrogram columns (dB, see audio.js): -100 dB
// and below dark, 0 dB bright; low frequencies at the bottom.
export function spectrogramImage(canvas, spec) {
  const cols = spec.columns.length, bins = cols ? spec.columns[0].length : 1;
  canvas.width = Math.max(1, cols);
  canvas.height = bins;
  const g = canvas.getContext('2d');
  const img = g.createImageData(canvas.width, bins);
  for (let x = 0; x < cols; x++) {
    const col = spec.columns[x];
    for (let k = 0; k < bins; k++) {
      const [r, gg, b] = heat((col[k] + 100) / 100);
      const o = ((bins - 1 - k) * canvas.width + x) * 4;
      img.data[o] = r; img.data[o + 1] = gg; img.data[o + 2] = b; img.data[o + 3] = 255;
    }
  }
  g.putImageData(img, 0, 0);
}

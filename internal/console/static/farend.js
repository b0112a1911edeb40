// The far end of "Hear a file": a second file that a stage asking for the
// far-end reference (aec: ABI §11) gets frame for frame, as voxhost run
// --far-end feeds it. POST /run takes both files as a multipart body; the
// result shows the reference lane between the input and the processed
// output, and how far the processed audio is below the input while the
// far end plays: the echo a canceller removed, where the caller is silent.

import {parseWAV, pcmBytes, toBase64, spectrogram} from './audio.js';
import {waveform, spectrogramImage} from './draw.js';

const $ = (id) => document.getElementById(id);

// The level comparison's frame: 20 ms at 8 kHz, the rate POST /run takes.
const FRAME = 160;
// The far end plays in a frame whose level is above this, in dBFS.
export const ACTIVE_DBFS = -50;

let routes = [];
let shown = null; // {reference, summary, url}

// setFarEndRoutes gives the module GET /pipelines' routes, whose stages
// say which ask for the reference.
export function setFarEndRoutes(pipelines) {
  routes = pipelines;
  update();
}

// asking names the stages of the chosen route and direction that ask for
// the reference.
function asking() {
  const p = routes.find((x) => x.name === $('file-route').value);
  const stages = (p && ($('file-direction').value === 'outbound' ? p.outbound : p.stages)) || [];
  return stages.filter((s) => s.reference).map((s) => s.plugin);
}

function update() {
  const names = asking();
  $('file-far-end').disabled = names.length === 0;
  $('file-far-end-note').textContent = names.length
    ? `${names.join(', ')} gets the far-end file as its reference, frame for frame (silence past its end)`
    : 'no stage of this route asks for a far-end reference (aec does)';
}
$('file-route').addEventListener('change', update);
$('file-direction').addEventListener('change', update);

// runBody is POST /run's body for file (input, its bytes): the file alone,
// or with a far-end file chosen, a multipart body of both (the browser
// sets its Content-Type, boundary included). far is that file, for
// showFarEnd.
export async function runBody(file, input) {
  const chosen = $('file-far-end');
  const farFile = chosen.files[0];
  if (chosen.disabled || !farFile) return {body: input, type: file.type || 'audio/wav', far: null};
  const bytes = await farFile.arrayBuffer();
  const form = new FormData();
  form.append('audio', new Blob([input], {type: file.type || 'audio/wav'}), file.name);
  form.append('far_end', new Blob([bytes], {type: farFile.type || 'audio/wav'}), farFile.name);
  return {body: form, type: undefined, far: {name: farFile.name, bytes}};
}

// clearFarEnd takes the last run's reference lane off the page.
export function clearFarEnd() {
  if (shown) URL.revokeObjectURL(shown.url);
  shown = null;
  $('file-far').hidden = true;
  $('file-far-audio').removeAttribute('src');
  $('file-far-audio').load();
  $('file-far-summary').textContent = '';
  for (const id of ['file-far-wave', 'file-far-spec']) {
    const c = $(id);
    c.getContext('2d').clearRect(0, 0, c.width, c.height);
  }
}

// energy sums the squares of samples[from, to).
function energy(samples, from, to) {
  let e = 0;
  for (let i = from; i < Math.min(to, samples.length); i++) e += samples[i] * samples[i];
  return e;
}

// FRAMES_PER_SECOND is a second of frames, the step of the drop's curve.
const FRAMES_PER_SECOND = 50;

const dB = (eIn, eOut) => 10 * Math.log10(Math.max(eIn, 1) / Math.max(eOut, 1));

// compare measures, over the frames where the reference plays, how far
// the processed audio is below the input: {frames, active, dropDB,
// bySecond}, the drop over the whole file and second by second (a
// canceller converging), null where no frame was active. The three are at
// one rate, frame samples to 20 ms (FRAME at 8 kHz). The live call's lanes
// (livelane.js) are measured by it too.
export function compare(input, reference, processed, frame = FRAME) {
  const frames = Math.floor(input.length / frame);
  const floor = frame * (32768 * 10 ** (ACTIVE_DBFS / 20)) ** 2;
  let active = 0, eIn = 0, eOut = 0;
  const bySecond = [];
  let sIn = 0, sOut = 0, sActive = 0;
  for (let k = 0; k < frames; k++) {
    const from = k * frame, to = from + frame;
    if (energy(reference, from, to) > floor) {
      const i = energy(input, from, to), o = energy(processed, from, to);
      active++; eIn += i; eOut += o;
      sActive++; sIn += i; sOut += o;
    }
    if ((k + 1) % FRAMES_PER_SECOND === 0 || k === frames - 1) {
      bySecond.push(sActive ? dB(sIn, sOut) : null);
      sIn = 0; sOut = 0; sActive = 0;
    }
  }
  return {frames, active, dropDB: active ? dB(eIn, eOut) : null, bySecond};
}

// showFarEnd draws the reference the stages got from far (runBody's):
// far-end sample k is the reference of input sample k, silence past its
// end, cut at the input's. inp and out are the parsed input and output.
export function showFarEnd(far, inp, out, events) {
  clearFarEnd();
  if (!far) return;
  const wav = parseWAV(far.bytes);
  const n = inp ? inp.samples.length : wav.samples.length;
  const reference = new Int16Array(n);
  reference.set(wav.samples.subarray(0, n));
  $('file-far').hidden = false;
  const url = URL.createObjectURL(new Blob([far.bytes], {type: 'audio/wav'}));
  $('file-far-audio').src = url;
  waveform($('file-far-wave'), reference, wav.rate, events, '--reference');
  spectrogramImage($('file-far-spec'), spectrogram(reference));
  let summary = null;
  let text = `${far.name}: ${(wav.samples.length / wav.rate).toFixed(2)} s`;
  if (!inp || out.rate !== wav.rate) {
    text += ` · the output is at ${out.rate} Hz, the input at ${wav.rate}: no level comparison`;
  } else {
    summary = compare(inp.samples, reference, out.samples);
    text += ` · plays in ${summary.active} of ${summary.frames} frames (above ${ACTIVE_DBFS} dBFS)`;
    if (summary.dropDB !== null) {
      text += `; there the processed audio is ${summary.dropDB.toFixed(1)} dB below the input (the echo removed where the caller is silent); ` +
        'second by second: ' + summary.bySecond.map((d) => (d === null ? '—' : d.toFixed(1))).join(', ') + ' dB';
    }
  }
  $('file-far-summary').textContent = text;
  shown = {reference, summary, url};
}

// window.voxhostFarEnd lets a test read the reference lane and its figures.
window.voxhostFarEnd = {
  reference: () => (shown ? toBase64(pcmBytes(shown.reference)) : null),
  summary: () => (shown ? shown.summary : null),
  enabled: () => !$('file-far-end').disabled,
};

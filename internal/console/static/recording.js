// The recording of the console's last call: once the call ends, the
// streams its route recorded (GET /calls/{id}/recording), each with a
// player and its waveform under the call's events. Nothing shows for a
// route that records nothing.

import {parseWAV, toBase64, pcmBytes} from './audio.js';
import {waveform} from './draw.js';

const $ = (id) => document.getElementById(id);

// The recorder finishes its files just after the call ends (its last
// writes, the headers, fsync): the listing is asked for until it shows
// them, for up to this long.
const WAIT_MS = 15000;

const STREAM_LABELS = {
  caller: 'the caller, as it came in',
  caller_processed: 'the caller after the inbound stages',
  heard: 'what the caller heard',
  reference: 'the far-end reference, as the inbound stages got it',
};

// The lanes' order: the caller, the reference beside it, then what the
// inbound stages made of the two (an aec's output), then what the caller
// heard.
const STREAM_ORDER = ['caller', 'reference', 'caller_processed', 'heard'];
const LANE_COLOURS = {caller: '--input', caller_processed: '--input', reference: '--reference', heard: '--output'};

let shown = null; // {callID, files: [{stream, rate, samples}], urls}
let generation = 0;

// clearRecording hides the section and frees the last recording's audio.
export function clearRecording() {
  generation++;
  for (const u of (shown && shown.urls) || []) URL.revokeObjectURL(u);
  shown = null;
  $('recording').hidden = true;
  $('recording-files').replaceChildren();
  document.body.dataset.recording = '';
}

// showRecording shows the recording of the call callID, with its events
// on each waveform; request answers the API's JSON, fetchFile a file of it.
export async function showRecording(callID, events, request, fetchFile) {
  clearRecording();
  const mine = generation;
  document.body.dataset.recording = 'waiting';
  let info = null;
  for (const start = Date.now(); ;) {
    try {
      info = await request('GET', 'calls/' + encodeURIComponent(callID) + '/recording');
      break;
    } catch (e) {
      // 404 until the files are listed; a route that records nothing
      // says so at once.
      if (e.status !== 404 || /no route records/.test(e.message) || Date.now() - start > WAIT_MS) {
        if (mine === generation) document.body.dataset.recording = 'none';
        return;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    if (mine !== generation) return;
  }
  const rec = info.recordings[info.recordings.length - 1];
  // Shown before the waveforms are drawn: a hidden canvas has no size.
  $('recording').hidden = false;
  const files = [], urls = [];
  $('recording-note').textContent = `call ${callID}, started ${new Date(rec.started).toLocaleTimeString()}: ` +
    rec.files.map((f) => `${f.stream} ${f.seconds.toFixed(1)} s at ${f.rate} Hz`).join(', ');
  const order = (f) => (STREAM_ORDER.includes(f.stream) ? STREAM_ORDER.indexOf(f.stream) : STREAM_ORDER.length);
  for (const f of [...rec.files].sort((a, b) => order(a) - order(b))) {
    const res = await fetchFile(f.url);
    if (!res.ok) throw new Error(`${f.url}: ${res.status}`);
    const blob = await res.blob();
    if (mine !== generation) return;
    const wav = parseWAV(await blob.arrayBuffer());
    const url = URL.createObjectURL(blob);
    urls.push(url);
    files.push({stream: f.stream, rate: wav.rate, samples: wav.samples, type: res.headers.get('Content-Type')});
    const item = document.createElement('div');
    item.className = 'recorded';
    item.dataset.stream = f.stream;
    const label = document.createElement('label');
    label.textContent = STREAM_LABELS[f.stream] || f.stream;
    const audio = document.createElement('audio');
    audio.controls = true;
    audio.preload = 'metadata';
    audio.src = url;
    label.append(' ', audio);
    const link = document.createElement('a');
    link.href = url;
    link.download = f.name;
    link.textContent = 'download';
    const canvas = document.createElement('canvas');
    canvas.className = 'wave';
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', `Waveform of the recorded ${f.stream} stream, with the call's events`);
    item.append(label, ' ', link, canvas);
    $('recording-files').append(item);
    waveform(canvas, wav.samples, wav.rate, events, LANE_COLOURS[f.stream] || '--output');
  }
  shown = {callID, files, urls};
  // Ready once the browser has read every player's file.
  await Promise.all([...$('recording-files').querySelectorAll('audio')].map((a) =>
    a.readyState >= 1 ? null : new Promise((resolve) => {
      a.addEventListener('loadedmetadata', resolve, {once: true});
      a.addEventListener('error', resolve, {once: true});
    })));
  if (mine === generation) document.body.dataset.recording = 'ready';
}

// window.voxhostRecording lets a test read what the players hold.
window.voxhostRecording = {
  files: () => (shown ? shown.files.map((f) => ({stream: f.stream, rate: f.rate, type: f.type, samples: toBase64(pcmBytes(f.samples))})) : null),
  durations: () => [...document.querySelectorAll('#recording-files audio')].map((a) => a.duration),
};

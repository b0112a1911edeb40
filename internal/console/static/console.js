// voxhost console: log in, call a route from the microphone, watch live
// calls, hear a file. Plain ES module, no dependencies, nothing fetched from
// anywhere but the listener that served the page.

import {encodeUlaw, decodeUlaw, pcmBytes, pcmSamples, parseWAV, toBase64, fromBase64, concat, spectrogram} from './audio.js';
import {timeline, waveform, spectrogramImage, eventStyle, peaksOf} from './draw.js';
import {showRecording, clearRecording} from './recording.js';
import {setFarEndRoutes, runBody, showFarEnd, clearFarEnd} from './farend.js';
import {renderMedia} from './media.js';
import {HostLanes} from './livelane.js';
import {setWatchFetch, watchButton} from './watch.js';

const settings = JSON.parse(document.getElementById('settings').textContent);
const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'voxhost-console-token';
let token = sessionStorage.getItem(TOKEN_KEY) || '';
let pipelines = [];

// The longest call audio the page keeps for the test hook and the
// timeline, per direction.
const KEEP_MS = 5 * 60 * 1000;

// ---- API ----------------------------------------------------------------

class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// request calls the API (settings.api) or, for a path that starts with
// "/", the listener's own path, with the token.
async function request(method, path, {body, type, signal} = {}) {
  const headers = new Headers();
  if (token) headers.set('Authorization', 'Bearer ' + token);
  if (type) headers.set('Content-Type', type);
  const url = path.startsWith('/') ? path : settings.api + path;
  let res;
  try {
    res = await fetch(url, {method, body, headers, cache: 'no-store', signal});
  } catch (e) {
    throw new APIError(0, `the host cannot be reached (${e.message})`);
  }
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = {error: `${res.status} ${res.statusText}`};
  }
  if (!res.ok) throw new APIError(res.status, (data && data.error) || `${res.status} ${res.statusText}`);
  return data;
}

// fetchFile fetches a path of the API with the token, for a body that is
// not JSON (a recorded WAV file, a live call's tap).
function fetchFile(path, signal) {
  return fetch(settings.api + path, {headers: token ? {Authorization: 'Bearer ' + token} : {}, cache: 'no-store', signal});
}

// The host's lanes of the page's own call (livelane.js), drawn in its
// timeline.
const callLanes = new HostLanes({
  drop: $('live-drop'),
  shown: (info) => {
    $('live-lanes').hidden = false;
    $('live-reference-key').hidden = !info.reference;
    $('timeline').classList.add('host-lanes');
  },
  cleared: () => {
    $('live-lanes').hidden = true;
    $('timeline').classList.remove('host-lanes');
  },
  state: (s) => { document.body.dataset.live = s; },
});
// window.voxhostLive lets a test read the lanes the host sent and the
// figures the page shows.
window.voxhostLive = callLanes.hook();
setWatchFetch(fetchFile);

// ---- log in -------------------------------------------------------------

// tokenName is what the page calls the token it asks for.
const tokenName = () => settings.token || 'token';

// loginError says why a log-in failed, for the person at the page (the
// API's answer is written for curl).
function loginError(e, kept) {
  if (e.status !== 401) return e.message;
  if (kept) return `The ${tokenName()} this tab kept is no longer accepted (the host may have restarted with other tokens): enter it again.`;
  return `The host did not accept that ${tokenName()}. Check that you pasted all of it and try again.`;
}

async function start() {
  $('token-what').textContent = tokenName();
  // A listener with tokens refuses a request without one, and the browser
  // logs every refusal as an error: ask for the token first.
  if (settings.needs_token && !token) {
    showLogin();
    return;
  }
  try {
    await loadPipelines();
    showApp();
  } catch (e) {
    if (e.status === 401) {
      if (token) $('login-error').textContent = loginError(e, true);
      token = '';
      sessionStorage.removeItem(TOKEN_KEY);
      showLogin();
    } else {
      showLogin();
      $('login-error').textContent = e.message;
    }
  }
}

function showLogin() {
  document.body.dataset.view = 'login';
  $('login').hidden = false;
  $('app').hidden = true;
  $('logout').hidden = true;
  $('token').focus();
}

function showApp() {
  $('login').hidden = true;
  $('app').hidden = false;
  $('logout').hidden = !token;
  if (!settings.all_calls) $('tab-calls').hidden = true;
  selectTab(document.querySelector('[role=tab][aria-selected=true]') || $('tab-call'), false);
}

$('login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  token = $('token').value.trim();
  $('login-error').textContent = '';
  try {
    await loadPipelines();
    sessionStorage.setItem(TOKEN_KEY, token);
    $('token').value = '';
    showApp();
  } catch (e) {
    $('login-error').textContent = loginError(e, false);
    token = '';
    $('token').select();
  }
});

$('logout').addEventListener('click', () => {
  hangUp('logged out');
  token = '';
  sessionStorage.removeItem(TOKEN_KEY);
  showLogin();
});

async function loadPipelines() {
  const data = await request('GET', 'pipelines');
  pipelines = data.pipelines || [];
  for (const sel of [$('route'), $('file-route')]) {
    const keep = sel.value;
    sel.replaceChildren(...pipelines.map((p) => {
      const o = document.createElement('option');
      o.value = p.name;
      o.textContent = p.name + (p.default ? ' (default)' : '') + (p.upstream ? ' — relay' : ' — echo');
      return o;
    }));
    sel.value = pipelines.some((p) => p.name === keep) ? keep : (data.default || '');
  }
  describeRoute($('route'), $('route-info'));
  describeRoute($('file-route'), $('file-route-info'));
  setFarEndRoutes(pipelines);
}

function stagesText(stages) {
  return (stages || []).map((s) => s.plugin + Object.entries(s.config || {}).map(([k, v]) => ` ${k}=${v}`).join('')).join(' | ');
}

function describeRoute(sel, out) {
  const p = pipelines.find((x) => x.name === sel.value);
  if (!p) { out.textContent = ''; return; }
  let text = 'inbound: ' + stagesText(p.stages);
  if (p.outbound && p.outbound.length) text += ' · outbound: ' + stagesText(p.outbound);
  text += p.upstream ? ` · relays to a ${p.upstream.protocol} bot (${p.upstream.codec} ${p.upstream.rate} Hz)` : ' · echo: you hear the result';
  out.textContent = text;
}
$('route').addEventListener('change', () => describeRoute($('route'), $('route-info')));
$('file-route').addEventListener('change', () => {
  describeRoute($('file-route'), $('file-route-info'));
  const p = pipelines.find((x) => x.name === $('file-route').value);
  $('file-direction').querySelector('[value=outbound]').disabled = !(p && p.outbound && p.outbound.length);
});

// ---- tabs (ARIA tabs: arrow keys move between them) ----------------------

const tabs = [...document.querySelectorAll('[role=tab]')];
function selectTab(tab, focus = true) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute('aria-selected', on ? 'true' : 'false');
    t.tabIndex = on ? 0 : -1;
    $(t.getAttribute('aria-controls')).hidden = !on;
  }
  if (focus) tab.focus();
  document.body.dataset.view = tab.id.replace('tab-', '');
  if (tab.id === 'tab-calls') startCallsPoll(); else stopCallsPoll();
  if (tab.id === 'tab-call') drawTimeline();
}
for (const t of tabs) {
  t.addEventListener('click', () => selectTab(t));
  t.addEventListener('keydown', (e) => {
    const shown = tabs.filter((x) => !x.hidden);
    const i = shown.indexOf(t);
    let next = null;
    if (e.key === 'ArrowRight') next = shown[(i + 1) % shown.length];
    if (e.key === 'ArrowLeft') next = shown[(i - 1 + shown.length) % shown.length];
    if (e.key === 'Home') next = shown[0];
    if (e.key === 'End') next = shown[shown.length - 1];
    if (next) { e.preventDefault(); selectTab(next); }
  });
}

// ---- a call -------------------------------------------------------------

// call is the call in progress, or the last one (kept for the test hook).
let call = null;

const FORMATS = {
  'mulaw-8000': {codec: 'mulaw', rate: 8000, label: 'μ-law 8 kHz'},
  'l16-8000': {codec: 'l16', rate: 8000, label: 'L16 8 kHz'},
  'l16-16000': {codec: 'l16', rate: 16000, label: 'L16 16 kHz'},
  'l16-24000': {codec: 'l16', rate: 24000, label: 'L16 24 kHz'},
};

function status(text, state) {
  $('call-status').textContent = text;
  $('call-status').classList.toggle('error', state === 'failed');
  if (state) document.body.dataset.call = state;
}

function randomID() {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return 'console-' + [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
}

// connect places the call at one format; it resolves with the open
// WebSocket, or rejects with the server's reason.
async function connect(route, fmt, callID) {
  const {ticket} = await request('POST', '/console/tickets');
  const u = new URL('/console/call', location.href);
  u.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  u.search = new URLSearchParams({ticket, pipeline: route, codec: fmt.codec, rate: String(fmt.rate), call_id: callID}).toString();
  const ws = new WebSocket(u);
  ws.binaryType = 'arraybuffer';
  await new Promise((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(null);
    ws.onclose = () => reject(null);
  }).catch(async () => {
    // A browser does not show a refused upgrade's answer: the console
    // kept it under the ticket.
    let refused = null;
    try {
      refused = (await request('GET', '/console/tickets/' + ticket)).refused;
    } catch { /* no reason to show */ }
    if (refused) throw new APIError(refused.status, refused.error);
    throw new APIError(0, 'the connection failed');
  });
  return ws;
}

async function placeCall() {
  const route = $('route').value;
  const choice = $('codec').value;
  clearCallView();
  status('asking for the microphone…', 'starting');
  $('call-button').textContent = 'Hang up';
  const c = {
    route, callID: randomID(), state: 'starting', events: [],
    formats: choice === 'auto' ? [FORMATS['l16-16000'], FORMATS['mulaw-8000']] : [FORMATS[choice]],
  };
  call = c;
  try {
    c.stream = await navigator.mediaDevices.getUserMedia({audio: {
      echoCancellation: $('aec').checked, noiseSuppression: false, autoGainControl: false, channelCount: 1}});
    c.ctx = new AudioContext({latencyHint: 'interactive'});
    await c.ctx.resume();
    await c.ctx.audioWorklet.addModule('capture-worklet.js');
    await attempt(c);
  } catch (e) {
    endCall(c, e && e.message ? e.message : String(e), 'failed');
  }
}

// rateRefusal says whether a refusal is the route's of the call's rate,
// so that "auto" may try the next format.
const rateRefusal = (message) => / Hz\b/.test(message || '');

// attempt places the call at its next format, trying the following one
// while the route refuses the rate.
async function attempt(c) {
  for (;;) {
    const fmt = c.formats.shift();
    if (call !== c || c.ended) return;
    status(`calling ${c.route} at ${fmt.label}…`, 'starting');
    try {
      c.ws = await connect(c.route, fmt, c.callID);
    } catch (e) {
      // A route that cannot take this rate says so: try the next.
      if (c.formats.length && rateRefusal(e.message)) continue;
      throw e;
    }
    if (call !== c || c.ended) { c.ws.close(1000); return; }
    c.format = fmt;
    run(c);
    return;
  }
}

// run wires the open call: microphone → worklet → socket, socket →
// speakers and the timeline.
function run(c) {
  const {ctx, ws, format} = c;
  Object.assign(c, {sent: [], received: [], events: [], inPeaks: [], outPeaks: [], sentMs: 0, outMs: 0, bytesSent: 0, bytesReceived: 0});
  c.state = 'connected';
  status(`in a call on ${c.route} at ${format.label} (call ${c.callID})`, 'connected');
  startKeypad(c);
  c.source = ctx.createMediaStreamSource(c.stream);
  c.capture = new AudioWorkletNode(ctx, 'voxhost-capture', {numberOfInputs: 1, numberOfOutputs: 1, outputChannelCount: [1],
    channelCount: 1, channelCountMode: 'explicit', processorOptions: {rate: format.rate}});
  const mute = ctx.createGain();
  mute.gain.value = 0;
  c.source.connect(c.capture).connect(mute).connect(ctx.destination);
  c.playAt = 0;
  c.capture.port.onmessage = (e) => {
    if (ws.readyState !== WebSocket.OPEN) return;
    const samples = new Int16Array(e.data);
    const bytes = format.codec === 'mulaw' ? encodeUlaw(samples) : pcmBytes(samples);
    ws.send(bytes);
    if (c.sentMs < KEEP_MS) c.sent.push(bytes);
    c.bytesSent += bytes.length;
    c.inPeaks[Math.round(c.sentMs / 20)] = peaksOf(samples, 1)[0];
    c.sentMs += 20;
  };
  ws.onmessage = (e) => {
    if (typeof e.data === 'string') {
      onText(c, e.data);
      return;
    }
    const bytes = new Uint8Array(e.data);
    const samples = format.codec === 'mulaw' ? decodeUlaw(bytes) : pcmSamples(bytes);
    if (c.outMs < KEEP_MS) c.received.push(bytes);
    c.bytesReceived += bytes.length;
    play(c, samples);
    const ms = samples.length * 1000 / format.rate;
    // Audio is drawn where it arrived in the input's time, after the
    // audio before it unless it lags that by more than 100 ms.
    if (c.sentMs - ms - c.outMs > 100) c.outMs = c.sentMs - ms;
    for (let t = 0; t < ms; t += 20) {
      const part = samples.subarray(t * format.rate / 1000, (t + 20) * format.rate / 1000);
      c.outPeaks[Math.round((c.outMs + t) / 20)] = peaksOf(part, 1)[0];
    }
    c.outMs += ms;
  };
  ws.onclose = (e) => {
    // A protocol without a start message learns its route at the upgrade
    // and refuses a rate it cannot take by closing (1003): try the next.
    if (e.code === 1003 && !c.bytesReceived && c.formats.length && rateRefusal(e.reason) && call === c && !c.ended) {
      teardown(c);
      attempt(c).catch((err) => endCall(c, err.message || String(err), 'failed'));
      return;
    }
    endCall(c, e.reason ? `${e.reason} (${e.code})` : `closed (${e.code})`, 'ended');
  };
  ws.onerror = () => {};
  callLanes.start(c.callID, fetchFile, () => call === c && c.state === 'connected');
  c.poll = setInterval(() => pollCosts(c), 1000);
  c.raf = requestAnimationFrame(function frame() {
    drawTimeline();
    if (call === c && c.state === 'connected') c.raf = requestAnimationFrame(frame);
  });
}

// play schedules received samples back to back.
function play(c, samples) {
  const {ctx, format} = c;
  const buf = ctx.createBuffer(1, samples.length, format.rate);
  const ch = buf.getChannelData(0);
  for (let i = 0; i < samples.length; i++) ch[i] = samples[i] / 32768;
  const src = ctx.createBufferSource();
  src.buffer = buf;
  src.connect(ctx.destination);
  const now = ctx.currentTime;
  // After a gap, start 60 ms ahead so that jitter does not cut the sound.
  if (c.playAt < now) c.playAt = now + 0.06;
  src.start(c.playAt);
  c.playAt += buf.duration;
  c.sources = (c.sources || []).filter((s) => s.end > now);
  c.sources.push({node: src, end: c.playAt});
}

// stopPlayback drops the audio scheduled but not played: a clear.
function stopPlayback(c) {
  for (const s of c.sources || []) {
    try { s.node.stop(); } catch { /* already ended */ }
  }
  c.sources = [];
  c.playAt = 0;
}

function onText(c, text) {
  let m;
  try { m = JSON.parse(text); } catch { return; }
  let e = null;
  if (m.event === 'plugin') e = {t_ms: m.t_ms, plugin: m.plugin, name: m.name, data: m.data};
  else if (m.event === 'clear') { e = {t_ms: c.sentMs, plugin: '', name: 'clear'}; stopPlayback(c); }
  else if (m.event === 'mark') e = {t_ms: c.sentMs, plugin: '', name: 'mark', mark: m.name};
  if (!e) return;
  c.events.push(e);
  addEventRow($('events'), e);
}

function addEventRow(table, e) {
  const body = table.tBodies[0];
  const row = body.insertRow();
  const s = eventStyle(e);
  const data = e.name === 'plugin_error' ? (e.error || JSON.stringify(e.data ?? '')) : e.data === undefined ? '' : JSON.stringify(e.data);
  for (const [i, v] of [e.t_ms, e.plugin || '—', e.name, data].entries()) {
    const cell = row.insertCell();
    cell.textContent = v;
    if (i === 2) cell.style.color = s.colour;
  }
  row.dataset.name = e.name;
  if (body.rows.length > 1000) body.deleteRow(0);
  const box = table.parentElement;
  if (box.scrollHeight - box.scrollTop - box.clientHeight < 60) box.scrollTop = box.scrollHeight;
}

function drawTimeline() {
  if (!call || $('view-call').hidden) return;
  // Now is the input's time, in which the events are stamped: what came
  // back in a burst after a lag may be drawn a little past it.
  // The host's lanes (livelane.js) go between the microphone's and what
  // came back: the reference beside the caller, then what the stages
  // made of the two.
  const host = callLanes.lanes();
  const lanes = [{peaks: call.inPeaks || [], fill: '--input', label: 'in'}];
  if (host && host.reference) lanes.push({peaks: host.reference, fill: '--reference', label: 'reference'});
  if (host) lanes.push({peaks: host.processed, fill: '--processed', label: 'processed'});
  lanes.push({peaks: call.outPeaks || [], fill: '--output', label: 'out'});
  timeline($('timeline'), {lanes, events: call.events.concat(call.keys || []), nowMs: call.sentMs || 0});
}

async function pollCosts(c) {
  try {
    const info = await request('GET', 'calls/' + encodeURIComponent(c.callID));
    if (call === c) renderCosts(info);
  } catch (e) {
    if (call === c && e.status !== 404) $('costs-note').textContent = e.message;
  }
}

// stageCosts lists a live call's stages with their sampled cost, from the
// GET /calls answer.
function stageCosts(info) {
  const out = [];
  for (const [dir, stages] of [['inbound', info.inbound], ['outbound', info.outbound]]) {
    for (const s of stages || []) out.push({dir, plugin: s.plugin, ns: s.mean_ns, samples: s.samples});
  }
  return out;
}

function renderCosts(info) {
  const body = $('costs').tBodies[0];
  body.replaceChildren();
  for (const s of stageCosts(info)) {
    const row = body.insertRow();
    for (const v of [s.dir, s.plugin, s.samples ? Math.round(s.ns).toLocaleString('en') : '—', s.samples ?? 0]) row.insertCell().textContent = v;
  }
  $('costs-note').textContent = `${info.frames ?? 0} frames in; a sample of frames (one in 64 by default) is timed plugin by plugin: the mean ns of those`;
}

// teardown unwires a call's audio and timers, keeping the microphone and
// the audio context for another attempt.
function teardown(c) {
  clearInterval(c.poll);
  cancelAnimationFrame(c.raf);
  if (c.capture) {
    c.capture.port.postMessage('stop');
    c.source.disconnect();
    c.capture.disconnect();
  }
  stopPlayback(c);
}

function endCall(c, why, state) {
  if (c.ended) return;
  c.ended = true;
  c.state = state;
  stopKeypad(c);
  teardown(c);
  if (c.stream) for (const t of c.stream.getTracks()) t.stop();
  if (c.ws && c.ws.readyState === WebSocket.OPEN) c.ws.send(JSON.stringify({event: 'stop'}));
  if (c.ws && c.ws.readyState <= WebSocket.OPEN) c.ws.close(1000, 'hung up');
  if (c.ctx) setTimeout(() => c.ctx.close(), 500);
  if (call === c) {
    status(state === 'failed' ? 'the call failed: ' + why : 'call ended: ' + why, state);
    $('call-button').textContent = 'Call';
    drawTimeline();
    showRecording(c.callID, c.events, request, fetchFile).catch((e) => { $('recording-note').textContent = e.message; });
  }
}

function hangUp(why) {
  if (call && !call.ended) endCall(call, why, 'ended');
}

function clearCallView() {
  $('dtmf-sent').textContent = 'the keys send DTMF during a call';
  clearRecording();
  callLanes.clear();
  $('events').tBodies[0].replaceChildren();
  $('costs').tBodies[0].replaceChildren();
  $('costs-note').textContent = '';
}

$('call-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  if (call && !call.ended) hangUp('you hung up');
  else placeCall();
});

// ---- keypad -------------------------------------------------------------

// The keys send the raw protocol's dtmf message, which the host hands to
// the plugins as a key press. Nothing need come back (the stock dtmf
// plugin hears tones, not these), so the page shows what it sent: beside
// the keys, in the events and on the timeline. The keys work only in a
// call.
const keys = [...document.querySelectorAll('#keypad button')];

function startKeypad(c) {
  c.keys = [];
  for (const b of keys) b.disabled = false;
  $('dtmf-sent').textContent = 'press a key to send its DTMF';
}

function stopKeypad(c) {
  for (const b of keys) b.disabled = true;
  if (!c.keys || !c.keys.length) $('dtmf-sent').textContent = 'the keys send DTMF during a call';
}

function sendKey(c, digit) {
  c.ws.send(JSON.stringify({event: 'dtmf', digit}));
  const e = {t_ms: c.sentMs, plugin: '', name: 'dtmf_sent', data: digit};
  c.keys.push(e);
  addEventRow($('events'), e);
  $('dtmf-sent').textContent = 'sent DTMF: ' + c.keys.map((k) => k.data).join(' ');
}

for (const b of keys) {
  b.addEventListener('click', () => {
    if (call && call.state === 'connected' && call.ws.readyState === WebSocket.OPEN) sendKey(call, b.dataset.digit);
  });
}

// ---- live calls ---------------------------------------------------------

let callsTimer = null;
function startCallsPoll() {
  stopCallsPoll();
  const tick = async () => {
    try {
      renderCalls(await request('GET', 'calls'));
      $('calls-status').textContent = 'updated ' + new Date().toLocaleTimeString();
    } catch (e) {
      $('calls-status').textContent = e.message;
    }
  };
  tick();
  callsTimer = setInterval(tick, 1000);
}
function stopCallsPoll() {
  clearInterval(callsTimer);
  callsTimer = null;
}

function duration(ms) {
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

function renderCalls(data) {
  const body = $('calls').tBodies[0];
  body.replaceChildren();
  const list = data.calls || [];
  for (const c of list) {
    const row = body.insertRow();
    row.dataset.id = c.id;
    const started = Date.parse(c.started);
    const costs = stageCosts(c).map((s) => `${s.plugin} ${s.samples ? Math.round(s.ns).toLocaleString('en') : '—'}`).join(' · ');
    const route = c.route ? c.route + (c.upstream ? ` → ${c.upstream} bot` : ' (echo)') : '(starting)';
    for (const v of [c.id, route, `${c.protocol}${c.format ? ', ' + c.format : ''}`, isNaN(started) ? '' : duration(Date.now() - started),
      c.frames ?? '', costs || '—']) {
      row.insertCell().textContent = v;
    }
    // A call whose stream started can be watched.
    const watch = row.insertCell();
    if (c.route) watch.append(watchButton(c.id));
  }
  renderMedia(list);
  $('calls-count').textContent = `${list.length} live call${list.length === 1 ? '' : 's'}`;
  const ended = Object.entries(data.ended || {}).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
  $('calls-ended').textContent = ended.length ? 'ended since start: ' + ended.map(([k, v]) => `${k} ${v}`).join(', ') : 'no call has ended since start';
}

// ---- hear a file --------------------------------------------------------

let fileResult = null;
// fileURLs are the object URLs of the shown result's players.
let fileURLs = [];

function fileStatus(text, failed) {
  $('file-status').textContent = text;
  $('file-status').classList.toggle('error', failed);
}

// clearFileResult takes the last run off the page (its players, drawings,
// events and download), so that a run that fails shows its error alone.
function clearFileResult() {
  fileResult = null;
  $('file-result').hidden = true;
  for (const u of fileURLs) URL.revokeObjectURL(u);
  fileURLs = [];
  for (const id of ['file-in-audio', 'file-out-audio']) {
    $(id).removeAttribute('src');
    $(id).load();
  }
  $('file-download').removeAttribute('href');
  $('file-download').removeAttribute('download');
  for (const id of ['file-in-wave', 'file-in-spec', 'file-out-wave', 'file-out-spec']) {
    const c = $(id);
    c.getContext('2d').clearRect(0, 0, c.width, c.height);
  }
  $('file-out-rate').textContent = '';
  $('file-events').tBodies[0].replaceChildren();
  clearFarEnd();
}

$('file-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  clearFileResult();
  const file = $('file').files[0];
  if (!file) { fileStatus('choose a WAV file first', true); return; }
  const route = $('file-route').value, direction = $('file-direction').value;
  fileStatus(`running ${file.name} through ${route}…`, false);
  document.body.dataset.file = 'running';
  $('file-run').disabled = true;
  try {
    const input = await file.arrayBuffer();
    const q = new URLSearchParams({pipeline: route, direction, name: file.name});
    const req = await runBody(file, input);
    const res = await request('POST', 'run?' + q, {body: req.body, type: req.type});
    showFileResult(file, input, res, req.far);
    document.body.dataset.file = 'done';
  } catch (e) {
    fileStatus(e.message, true);
    document.body.dataset.file = 'failed';
  } finally {
    $('file-run').disabled = false;
  }
});

function showFileResult(file, input, res, far) {
  const outWAV = fromBase64(res.wav);
  const out = parseWAV(outWAV.buffer);
  let inp = null;
  try { inp = parseWAV(input); } catch { /* the server read it; the page draws what it can */ }
  const events = res.events.map((e) => ({...e, name: e.name || e.kind}));
  fileResult = {result: res, events, output: out};
  const seconds = (res.input_ms / 1000).toFixed(2);
  fileStatus(`${file.name}: ${seconds} s, ${res.frames} frames through ${res.stages.join(' | ')} (${res.direction}), ` +
    `${events.length} events, ${res.faults} plugin errors, ${(res.elapsed_ns / Math.max(1, res.frames)).toFixed(0)} ns per frame` +
    (res.fault ? ' — ' + res.fault : ''), false);
  $('file-result').hidden = false;
  const inURL = URL.createObjectURL(new Blob([input], {type: 'audio/wav'}));
  const outURL = URL.createObjectURL(new Blob([outWAV], {type: 'audio/wav'}));
  fileURLs = [inURL, outURL];
  $('file-in-audio').src = inURL;
  $('file-out-audio').src = outURL;
  const a = $('file-download');
  a.href = outURL;
  a.download = file.name.replace(/\.[^.]*$/, '') + '.processed.wav';
  if (inp) {
    waveform($('file-in-wave'), inp.samples, inp.rate, events, '--input');
    spectrogramImage($('file-in-spec'), spectrogram(inp.samples));
  }
  waveform($('file-out-wave'), out.samples, out.rate, events, '--output');
  spectrogramImage($('file-out-spec'), spectrogram(out.samples));
  $('file-out-rate').textContent = `${out.rate} Hz`;
  for (const e of events) addEventRow($('file-events'), e);
  showFarEnd(far, inp, out, events);
}

// ---- test hook ----------------------------------------------------------

// window.voxhostConsole lets a test read what the page sent, heard and saw.
window.voxhostConsole = {
  call() {
    if (!call) return null;
    return {state: call.state, callID: call.callID, route: call.route, format: call.format || null,
      sentMs: call.sentMs, events: call.events, keys: call.keys || [], bytesSent: call.bytesSent, bytesReceived: call.bytesReceived};
  },
  sent: () => (call ? toBase64(concat(call.sent)) : ''),
  received: () => (call ? toBase64(concat(call.received)) : ''),
  file: () => (fileResult ? {events: fileResult.events, rate: fileResult.output.rate,
    samples: toBase64(pcmBytes(fileResult.output.samples)), stages: fileResult.result.stages} : null),
};

window.addEventListener('resize', () => drawTimeline());
start();

// A live call as the host ran it: GET /calls/{id}/tap, read while the
// call lasts, gives every caller frame the host ran from then on: the
// caller's audio as it came in, the far-end reference the inbound stages
// got with it (what the caller was sent, on the caller's clock: the ABI's
// alignment, the one the recording's reference stream records), and what
// the stages made of the two. The Call view draws the reference and the
// processed audio as lanes between the microphone's and what came back;
// the Live calls tab draws the three of a call it watches (watch.js). Both
// show how far the processed audio is below the caller's while the
// reference plays (farend.js's compare, as for a file): the echo a
// canceller removed, where the caller is silent.

import {compare, ACTIVE_DBFS} from './farend.js';
import {peaksOf} from './draw.js';
import {pcmBytes, toBase64} from './audio.js';

const $ = (id) => document.getElementById(id);

// The longest call audio the lanes keep, as the call's own (console.js).
const KEEP_MS = 5 * 60 * 1000;
// How often the drop is measured again while the call runs.
const MEASURE_MS = 1000;
// How long the page asks for the tap before the call's stream has started
// (404 until then).
const OPEN_WAIT_MS = 10000;
// A record's header (admin.TapRecordHeader).
const RECORD_HEADER = 12;


// lane is a growing PCM16 stream, placed by time.
function lane(rate) {
  return {rate, samples: new Int16Array(rate * 10), length: 0};
}

// put writes samples into l at ms on the caller's clock.
function put(l, ms, samples) {
  const at = Math.round(ms * l.rate / 1000);
  const end = at + samples.length;
  if (end > l.rate * KEEP_MS / 1000) return;
  if (end > l.samples.length) {
    const grown = new Int16Array(Math.max(end, 2 * l.samples.length));
    grown.set(l.samples.subarray(0, l.length));
    l.samples = grown;
  }
  l.samples.set(samples, at);
  l.length = Math.max(l.length, end);
}

const view = (l) => l.samples.subarray(0, l.length);

// slots puts the peaks of samples (ms long, at ms) into peaks, a slot per
// 20 ms, as the page's own lanes are kept.
function slots(peaks, ms, samples, rate) {
  const frameMs = samples.length * 1000 / rate;
  for (let t = 0; t < frameMs; t += 20) {
    const part = samples.subarray(Math.round(t * rate / 1000), Math.round((t + 20) * rate / 1000));
    if (part.length) peaks[Math.round((ms + t) / 20)] = peaksOf(part, 1)[0];
  }
}

// HostLanes reads one live call's tap and keeps its lanes. The page has
// two: the Call view's, of the page's own call, and the Live calls tab's,
// of a call the person chose to watch. ui says where it shows itself:
// drop (an element for its figures), shown(info) when the tap opened,
// state(s) as it goes (opening, open, ended, none), cleared() when it is
// cleared.
export class HostLanes {
  constructor(ui) {
    this.ui = ui;
    this.live = null;
  }

  // clear stops reading the tap and forgets its lanes.
  clear() {
    if (this.live) this.live.abort.abort();
    this.live = null;
    this.ui.drop.textContent = '';
    this.ui.cleared();
    this.ui.state('');
  }

  // start reads the tap of the call callID while alive() says the call
  // goes on (a tap is refused with 404 until its stream starts);
  // fetchFile fetches a path of the API with the token.
  start(callID, fetchFile, alive) {
    this.clear();
    const me = {callID, abort: new AbortController(), info: null, frames: 0, lost: 0, spans: [], nowMs: 0,
      callerPeaks: [], refPeaks: [], procPeaks: [], measuredAt: 0};
    this.live = me;
    this.ui.state('opening');
    this.read(me, fetchFile, alive).catch((e) => {
      if (this.live !== me || me.abort.signal.aborted) return;
      this.ui.drop.textContent = 'the host\'s view of the call stopped: ' + e.message;
      this.ui.state(me.info ? 'ended' : 'none');
    });
  }

  async read(me, fetchFile, alive) {
    const path = 'calls/' + encodeURIComponent(me.callID) + '/tap';
    let res;
    for (const start = Date.now(); ;) {
      res = await fetchFile(path, me.abort.signal);
      if (res.ok) break;
      const err = await res.json().catch(() => ({}));
      if (res.status !== 404 || !alive() || Date.now() - start > OPEN_WAIT_MS) throw new Error(err.error || `${res.status}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (this.live !== me) return;
    }
    const reader = res.body.getReader();
    let buf = new Uint8Array(0);
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      const joined = new Uint8Array(buf.length + value.length);
      joined.set(buf);
      joined.set(value, buf.length);
      buf = joined.subarray(this.parse(me, joined));
      if (this.live !== me) return;
    }
    this.measure(me);
    if (this.live === me) this.ui.state('ended');
  }

  // parse takes the header line and the whole records from bytes, and
  // returns how many bytes it took.
  parse(me, bytes) {
    let off = 0;
    if (!me.info) {
      const nl = bytes.indexOf(10);
      if (nl < 0) return 0;
      me.info = JSON.parse(new TextDecoder().decode(bytes.subarray(0, nl)));
      if (me.info.record_header !== RECORD_HEADER) throw new Error(`the host's tap records have a ${me.info.record_header}-byte header, this page reads ${RECORD_HEADER}`);
      me.caller = lane(me.info.caller_rate);
      me.reference = lane(me.info.caller_rate);
      me.processed = lane(me.info.processed_rate);
      this.ui.shown(me.info);
      this.ui.state('open');
      this.ui.drop.textContent = me.info.reference
        ? 'the reference lane is what the host sent the caller, placed where the caller played it'
        : 'this route keeps no far-end reference (no inbound stage asks for it: aec does), so there is no reference lane';
      off = nl + 1;
    }
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (;;) {
      if (bytes.length - off < RECORD_HEADER) return off;
      const at = dv.getUint32(off, true), lost = dv.getUint16(off + 4, true);
      const n = [dv.getUint16(off + 6, true), dv.getUint16(off + 8, true), dv.getUint16(off + 10, true)];
      const size = RECORD_HEADER + 2 * (n[0] + n[1] + n[2]);
      if (bytes.length - off < size) return off;
      let p = off + RECORD_HEADER;
      const take = (count) => {
        const s = new Int16Array(count);
        for (let i = 0; i < count; i++) s[i] = dv.getInt16(p + 2 * i, true);
        p += 2 * count;
        return s;
      };
      const caller = take(n[0]), reference = take(n[1]), processed = take(n[2]);
      put(me.caller, at, caller);
      slots(me.callerPeaks, at, caller, me.info.caller_rate);
      if (reference.length) {
        put(me.reference, at, reference);
        slots(me.refPeaks, at, reference, me.info.caller_rate);
      }
      put(me.processed, at, processed);
      slots(me.procPeaks, at, processed, me.info.processed_rate);
      me.frames++;
      me.lost += lost;
      // The stretches of the caller's clock the lanes hold: from the tap's
      // opening, broken where frames were lost.
      const end = at + n[0] * 1000 / me.info.caller_rate, last = me.spans[me.spans.length - 1];
      if (last && last[1] === at) last[1] = end; else me.spans.push([at, end]);
      me.nowMs = end;
      off += size;
      if (at - me.measuredAt >= MEASURE_MS) this.measure(me, at);
    }
  }

  // summary measures the drop over the lanes so far: null without a
  // reference, or when the stages end at another rate than the caller's.
  summary() {
    const me = this.live;
    if (!me || !me.info || !me.info.reference || me.info.processed_rate !== me.info.caller_rate) return null;
    const n = me.caller.length;
    const cut = (l) => {
      const s = new Int16Array(n);
      s.set(view(l).subarray(0, n));
      return s;
    };
    return compare(view(me.caller), cut(me.reference), cut(me.processed), me.info.caller_rate / 50);
  }

  // measure shows the drop over the lanes so far, and second by second.
  measure(me, at = me.measuredAt) {
    me.measuredAt = at;
    if (this.live !== me || !me.info || !me.info.reference) return;
    const s = this.summary();
    if (!s) {
      this.ui.drop.textContent = `the stages end at ${me.info.processed_rate} Hz, the caller is at ${me.info.caller_rate}: no level comparison`;
      return;
    }
    const last = s.bySecond.slice(-10).map((d) => (d === null ? '—' : d.toFixed(1))).join(', ');
    this.ui.drop.textContent = `the reference plays (above ${ACTIVE_DBFS} dBFS) in ${s.active} of ${s.frames} frames` +
      (s.dropDB === null ? '' : `; there the processed audio is ${s.dropDB.toFixed(1)} dB below the caller's (where the caller is silent, the echo removed; ` +
        'while the caller talks the figure counts its speech too); ' +
        `the last seconds: ${last} dB`) + (me.lost ? ` · ${me.lost} frames did not reach this page in time` : '');
  }

  // lanes are the lanes for a timeline, each a peak per 20 ms slot: the
  // caller's as the host got it, the reference's (null without one) and
  // the processed audio's; null before the tap opened.
  lanes() {
    const me = this.live;
    if (!me || !me.info) return null;
    return {caller: me.callerPeaks, reference: me.info.reference ? me.refPeaks : null, processed: me.procPeaks, nowMs: me.nowMs};
  }

  // hook is what the page's test hooks read of the lanes.
  hook() {
    const samplesOf = (l) => (l ? toBase64(pcmBytes(view(l))) : '');
    return {
      callID: () => (this.live ? this.live.callID : null),
      info: () => (this.live ? this.live.info : null),
      frames: () => (this.live ? this.live.frames : 0),
      lost: () => (this.live ? this.live.lost : 0),
      spans: () => (this.live ? this.live.spans : []),
      caller: () => samplesOf(this.live && this.live.caller),
      reference: () => samplesOf(this.live && this.live.reference),
      processed: () => samplesOf(this.live && this.live.processed),
      summary: () => this.summary(),
    };
  }
}

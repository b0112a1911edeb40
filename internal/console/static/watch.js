// Watching a live call from the Live calls tab: any call the host runs,
// not only the page's own, drawn from the host's tap (livelane.js) as
// three lanes, the caller's audio as the host got it, the far-end
// reference the inbound stages got with it (for a call that keeps one:
// aec's), and what the stages made of the two, with the drop where the
// reference plays.

import {HostLanes} from './livelane.js';
import {timeline} from './draw.js';

const $ = (id) => document.getElementById(id);

let fetchFile = null;
let watching = null;
let raf = 0;

const lanes = new HostLanes({
  drop: $('watch-drop'),
  shown: (info) => { $('watch-reference-key').hidden = !info.reference; },
  cleared: () => {},
  state: (s) => {
    document.body.dataset.watch = s;
    if (s === 'ended') $('watch-state').textContent = 'the call ended';
    if (s === 'none') $('watch-state').textContent = 'the call cannot be watched';
  },
});

// setWatchFetch gives the module the page's fetch of an API path with the
// token.
export function setWatchFetch(f) {
  fetchFile = f;
}

// watchButton is a button that watches the call id.
export function watchButton(id) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = watching === id ? 'watching' : 'watch';
  b.disabled = watching === id;
  b.setAttribute('aria-label', `watch call ${id}: the host's lanes of it`);
  b.addEventListener('click', () => watch(id));
  return b;
}

function watch(id) {
  watching = id;
  $('watch').hidden = false;
  $('watch-title').textContent = `Watching call ${id}`;
  $('watch-state').textContent = '';
  lanes.start(id, fetchFile, () => watching === id);
  cancelAnimationFrame(raf);
  raf = requestAnimationFrame(function frame() {
    draw();
    if (watching === id) raf = requestAnimationFrame(frame);
  });
}

export function stopWatching() {
  watching = null;
  cancelAnimationFrame(raf);
  lanes.clear();
  $('watch').hidden = true;
}
$('watch-stop').addEventListener('click', stopWatching);

function draw() {
  const l = lanes.lanes();
  if (!l || $('watch').hidden) return;
  const shown = [{peaks: l.caller, fill: '--input', label: 'caller'}];
  if (l.reference) shown.push({peaks: l.reference, fill: '--reference', label: 'reference'});
  shown.push({peaks: l.processed, fill: '--processed', label: 'processed'});
  timeline($('watch-timeline'), {lanes: shown, events: [], nowMs: l.nowMs});
}

// window.voxhostWatch lets a test read the watched call's lanes.
window.voxhostWatch = lanes.hook();

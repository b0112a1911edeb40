// The RTP media of the live SIP calls: for each call whose leg reports
// its media (GET /calls' media), what the host received of the peer's
// stream (packets, lost, late, concealed, jitter, the jitter buffer's
// depth) and what the peer's RTCP reports say of the host's (lost,
// jitter). The section hides while no live call has RTP.

const $ = (id) => document.getElementById(id);

const fixed = (v, digits) => (typeof v === 'number' ? v.toFixed(digits) : '');

// renderMedia fills the section from the GET /calls answer's calls.
export function renderMedia(calls) {
  const withMedia = calls.filter((c) => c.media);
  $('calls-media').hidden = withMedia.length === 0;
  const body = $('calls-media-table').tBodies[0];
  body.replaceChildren();
  for (const c of withMedia) {
    const m = c.media;
    const row = body.insertRow();
    row.dataset.id = c.id;
    const peer = m.peer_reports > 0
      ? [`${fixed(m.peer_lost_percent, 1)} %`, `${fixed(m.peer_jitter_ms, 1)} ms`, String(m.peer_reports)]
      : ['no report yet', '', '0'];
    for (const v of [c.id, m.held ? 'held' : 'live', String(m.packets), String(m.lost), String(m.late), String(m.concealed),
      `${fixed(m.jitter_ms, 1)} ms`, `${fixed(m.buffer_ms, 0)} ms`, ...peer]) {
      row.insertCell().textContent = v;
    }
  }
}

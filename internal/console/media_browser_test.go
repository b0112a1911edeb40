package console_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/internal/siptest"
)

// TestSIPCallMedia places a SIP call that loses ten packets and whose
// caller reports, by RTCP, 10% of the host's packets lost and 4 ms of
// jitter: the Live calls tab shows the call's RTP figures, both ways,
// while it runs.
func TestSIPCallMedia(t *testing.T) {
	rtpMin := 50000 + 20*(os.Getpid()%500)
	h := startHostWith(t, func(cfg *config.Config) {
		cfg.SIP.Listen = "127.0.0.1:0"
		cfg.SIP.RTPPortMin, cfg.SIP.RTPPortMax = rtpMin, rtpMin+19
		cfg.SIP.Trunks = map[string]config.SIPTrunk{"local": {Sources: []string{"127.0.0.1"}}}
	})
	mic, _ := speechFile(t)
	ctx := browser(t, mic)
	login(t, ctx, h.adminURL, adminToken)

	call := siptest.Dial(t, h.h.SIPAddr(), "talk")
	hostSSRC := call.ReadRTP().SSRC
	// The caller speaks at real time, as a phone does, reports on the
	// host's stream, and leaves a gap of ten packets after the twentieth,
	// which the host's playout counts lost when their turn comes (on a
	// busy machine, whose ticks bunch the packets, the jitter buffer may
	// drain some of the gap's turns instead).
	speaking, stop := context.WithCancel(context.Background())
	sent := make(chan struct{})
	defer func() {
		stop()
		<-sent
	}()
	go func() {
		defer close(sent)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		frame := bytes.Repeat([]byte{0x42}, 160)
		for n := 0; ; n++ {
			select {
			case <-speaking.Done():
				return
			case <-tick.C:
			}
			switch n {
			case 10: // the host has the caller's stream: it takes its reports
				call.SendReport(hostSSRC, 26, 32) // 26/256 lost, 32 samples of jitter
			case 20:
				call.Skip(10)
			}
			call.SendAudio(frame)
		}
	}()

	run(t, ctx, "opening the live calls", chromedp.Click(chromedp.ID("tab-calls")))
	// The list is asked for every second: the loss shows once the gap's
	// turn has come and gone, the report once it has arrived.
	shows := `(() => {
  const r = document.querySelector('#calls-media-table tbody tr');
  if (!r) return false;
  const [packets, lost] = [Number(r.cells[2].textContent), Number(r.cells[3].textContent)];
  return packets >= 20 && lost >= 1 && lost <= 10 && r.cells[8].textContent === '10.2 %' && r.cells[9].textContent === '4.0 ms' && r.cells[10].textContent === '1';
})()`
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the media section shows: %q", eval[string](t, ctx, `document.getElementById('calls-media').textContent`))
			t.Logf("the calls table shows: %q", eval[string](t, ctx, `document.getElementById('calls').textContent`))
		}
	})
	waitFor(t, ctx, "the SIP call's media shows the gap's loss and the peer's report", shows)
	if hidden := eval[bool](t, ctx, `document.getElementById('calls-media').hidden`); hidden {
		t.Fatal("the media section is hidden with a SIP call live")
	}
	screenshot(t, ctx, "sip-media")
	t.Logf("the live calls tab shows the SIP call's media: %s", text(t, ctx, "#calls-media-table tbody tr"))
}

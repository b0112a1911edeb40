package loadgen_test

import (
	"context"
	"testing"
	"time"

	"github.com/voxhost/voxhost/internal/botsim"
	"github.com/voxhost/voxhost/internal/loadgen"
	"github.com/voxhost/voxhost/internal/signal"
)

// TestAgainstTheBotSimulator calls the simulator directly: the bot's side
// of the twilio and raw dialects is the carrier's side of the protocols
// loadgen speaks, so this is what a relay route's bot hears, with no host
// in between.
func TestAgainstTheBotSimulator(t *testing.T) {
	const delay, calls = 20 * time.Millisecond, 4
	sim, url := botsim.Start(t, botsim.Config{Delay: delay, RecordAudio: -1})
	for _, proto := range []string{loadgen.ProtocolRaw, loadgen.ProtocolTwilio} {
		t.Run(proto, func(t *testing.T) {
			res, err := loadgen.Run(context.Background(), loadgen.Config{URL: url + botsim.Paths[proto], Protocol: proto, Pipeline: "relay",
				MetricsURL: "-", Calls: calls, Duration: 600 * time.Millisecond, Ramp: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if res.FramesReceived != res.FramesDue || res.ExtraReplies != 0 || res.ConnectionsFailed != 0 {
				t.Errorf("received %d of %d, %d extra, errors %q", res.FramesReceived, res.FramesDue, res.ExtraReplies, res.Errors)
			}
			if res.RTT.P50 < delay {
				t.Errorf("rtt p50 %v, under the bot's %v delay", res.RTT.P50, delay)
			}
		})
	}
	for _, c := range sim.Calls() {
		if c.AudioIn != 30*loadgen.FrameBytes || c.AudioOut != c.AudioIn {
			t.Errorf("%s: the bot heard %d bytes and said %d, want %d", c.Summary(), c.AudioIn, c.AudioOut, 30*loadgen.FrameBytes)
		}
		if c.Protocol == botsim.ProtocolTwilio && (c.Start == nil || c.Start.Params["pipeline"] != "relay") {
			t.Errorf("twilio start %+v, want the route in customParameters", c.Start)
		}
	}
}

// TestTwilioMarksComeBackOncePlayed has a bot speak 200 ms and mark it:
// loadgen, as Twilio, returns the mark once those 200 ms have played from
// their arrival, not at once.
func TestTwilioMarksComeBackOncePlayed(t *testing.T) {
	const speech = 200 * time.Millisecond
	sim, url := botsim.Start(t, botsim.Config{Mode: botsim.Speak, Speech: botsim.Speech{PCM: signal.Speech(8000, speech.Seconds()), Rate: 8000, Name: "hi"}})
	res, err := loadgen.Run(context.Background(), loadgen.Config{URL: url + "/twilio", Protocol: loadgen.ProtocolTwilio,
		MetricsURL: "-", Calls: 2, Duration: 600 * time.Millisecond, Ramp: 50 * time.Millisecond, Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.MarksReturned != 2 || res.MarksDropped != 0 {
		t.Errorf("%d marks returned, %d dropped, want 2 and 0", res.MarksReturned, res.MarksDropped)
	}
	calls, err := sim.Wait(context.Background(), func(calls []botsim.Call) bool { return len(calls) == 2 && !calls[0].Live && !calls[1].Live })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		var started, acked time.Duration
		for _, e := range c.Events {
			switch e.Type {
			case "start":
				started = e.At
			case "mark":
				acked = e.At
			}
		}
		if len(c.MarksAcked) != 1 || c.MarksAcked[0] != "hi" || acked-started < speech*3/4 {
			t.Errorf("%s: marks %q, returned %v after the start, want %q after about %v", c.Summary(), c.MarksAcked, acked-started, "hi", speech)
		}
	}
}

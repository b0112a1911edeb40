package hosttest

import (
	"fmt"
	"sync"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// StandInTwilio registers a stand-in "twilio" dialect unless transport
// registers the real one, and says whether it did: config, app and admin
// tests configure relay routes while the client side of the Twilio
// protocol is still being written. The stand-in checks what PROTOCOLS.md
// says the real one accepts (μ-law at 8000 Hz, no options) and carries no
// calls: its sessions panic when used, so a test that places a relayed
// call skips when it is in use. Once transport registers "twilio" itself,
// this does nothing and returns false (and can go).
func StandInTwilio() (standIn bool) {
	standInOnce.Do(func() {
		if _, err := transport.LookupDialect("twilio"); err != nil {
			transport.RegisterDialect(standInTwilio{})
			standInUsed = true
		}
	})
	return standInUsed
}

var (
	standInOnce sync.Once
	standInUsed bool
)

type standInTwilio struct{}

func (standInTwilio) Name() string { return "twilio" }

func (standInTwilio) CheckFormat(f codec.Format) error {
	if f != codec.Telephony {
		return fmt.Errorf("twilio carries %s only, not %s", codec.Telephony, f)
	}
	return nil
}

// NewBotSession returns a session whose every method panics: no test
// places a relayed call on the stand-in.
func (standInTwilio) NewBotSession(transport.BotConfig) transport.BotSession {
	return struct{ transport.BotSession }{}
}

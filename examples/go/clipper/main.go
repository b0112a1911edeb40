// Command clipper is the "every SDK feature" example of examples/CLIPPER.md
// written with the Go SDK: a peak limiter with a 16-sample lookahead, a
// config with a number, a string and a boolean and no unknown keys, dB both
// ways, an event with integers and a fixed-point decimal, a DTMF reset, held
// audio that clear drops and flush releases. Process allocates nothing.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o build/clipper.wasm ./clipper
package main

import (
	"errors"
	"math"
	"strconv"

	voxhost "github.com/voxhost/voxhost/sdk/go"
)

const hold = 16

type clipper struct {
	threshold    int32
	soft, report bool
	clipped      int64
	peak         int32
	ring         [hold]int16
	pos, held    int
	event        [96]byte // reused for the clipper.stats payload
}

func init() { voxhost.Register(&clipper{threshold: thresholdOf(-6), report: true}) }

// main is required by -buildmode=c-shared and never called.
func main() {}

// thresholdOf is the threshold, in samples, of a level in dBFS.
func thresholdOf(db float64) int32 {
	return int32(math.Floor(float64(voxhost.FullScale*voxhost.DBToGain(db)) + 0.5))
}

// Init reads the config; the SDK logs an error it returns, which names the
// plugin as every language's clipper does.
func (c *clipper) Init(cfg voxhost.Config) (err error) {
	defer func() {
		if err != nil {
			err = errors.New("clipper: " + err.Error())
		}
	}()
	if err := cfg.CheckKeys("threshold_db", "mode", "report"); err != nil {
		return err
	}
	db, err := cfg.NumberIn("threshold_db", -6, -60, 0)
	if err != nil {
		return err
	}
	switch mode, ok := cfg.String("mode"); {
	case !cfg.Has("mode"):
	case ok && mode == "hard":
		c.soft = false
	case ok && mode == "soft":
		c.soft = true
	default:
		return errors.New(`"mode" must be "hard" or "soft"`)
	}
	if cfg.Has("report") {
		report, ok := cfg.Bool("report")
		if !ok {
			return errors.New(`"report" must be true or false`)
		}
		c.report = report
	}
	c.threshold = thresholdOf(db)
	return nil
}

func (c *clipper) Process(s []int16) int {
	for i, v := range s {
		a, x := int32(v), int32(v)
		if a < 0 {
			a = -a
		}
		c.peak = max(c.peak, a)
		if a > c.threshold {
			c.clipped++
			if c.soft {
				a = c.threshold + (a-c.threshold)>>2
			} else {
				a = c.threshold
			}
			x = a
			if v < 0 {
				x = -a
			}
		}
		s[i], c.ring[c.pos] = c.ring[c.pos], int16(x)
		c.pos = (c.pos + 1) % hold
		c.held = min(c.held+1, hold)
	}
	return len(s)
}

// stats emits clipper.stats {"key":"5","clipped":12,"peak":32768,"peak_dbfs":0.00};
// a key of 0 is null.
func (c *clipper) stats(key byte) {
	b := append(c.event[:0], `{"key":`...)
	if key != 0 {
		b = voxhost.AppendJSONString(b, string(rune(key)))
	} else {
		b = append(b, "null"...)
	}
	b = strconv.AppendInt(append(b, `,"clipped":`...), c.clipped, 10)
	b = strconv.AppendInt(append(b, `,"peak":`...), int64(c.peak), 10)
	b = voxhost.AppendFixed(append(b, `,"peak_dbfs":`...), voxhost.GainToDB(float64(c.peak)/voxhost.FullScale), 2)
	voxhost.Emit("clipper.stats", append(b, '}'))
}

func (c *clipper) dropHeld() { c.ring, c.pos, c.held = [hold]int16{}, 0, 0 }

func (c *clipper) Event(ev voxhost.Event) int {
	switch ev.Kind {
	case voxhost.EventDTMF:
		if c.report {
			c.stats(ev.Key())
		}
		if ev.Key() == '*' {
			c.clipped, c.peak = 0, 0
		}
	case voxhost.EventClear:
		c.dropHeld()
	case voxhost.EventFlush:
		out, n := ev.Buffer(), c.held
		for i := range n {
			out[i] = c.ring[(c.pos+hold-n+i)%hold]
		}
		if c.report {
			c.stats(0)
		}
		c.dropHeld()
		return n
	}
	return voxhost.StatusOK
}

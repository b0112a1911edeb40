package plugintest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/voxhost/voxhost/abi"
)

// LogLine is one line the plugin (or the host, about the plugin) logged.
type LogLine struct {
	// Level is debug, info, warn or error.
	Level string `json:"level"`
	// Msg is the message, with the record's attributes but the plugin's
	// name appended as key=value.
	Msg string `json:"msg"`
}

// keepLines bounds the log lines kept: a soak of minutes may log on every
// frame, and only the last lines before a failure are shown.
const keepLines = 256

// linesPerCheck is the most log lines shown beside one check.
const linesPerCheck = 20

// capture is the slog.Handler every instance of a run logs to. It keeps the
// last keepLines records, numbered, so a check can take the lines logged
// since it began.
type capture struct {
	mu    sync.Mutex
	lines []LogLine // a ring: record n is at n % keepLines
	next  uint64    // the number of the next record
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *capture) WithGroup(string) slog.Handler            { return c }

// Handle keeps the record.
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	line := LogLine{Level: strings.ToLower(r.Level.String()), Msg: r.Message}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "plugin" { // every line is the plugin's
			line.Msg += " " + a.String()
		}
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lines) < keepLines {
		c.lines = append(c.lines, line)
	} else {
		c.lines[c.next%keepLines] = line
	}
	c.next++
	return nil
}

// mark is the number of the next record, for since.
func (c *capture) mark() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next
}

// since returns the last linesPerCheck lines logged from record from on,
// and how many lines of that span it leaves out.
func (c *capture) since(from uint64) ([]LogLine, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	first := max(from, c.next-min(c.next, keepLines), c.next-min(c.next, linesPerCheck))
	var out []LogLine
	for n := first; n < c.next; n++ {
		out = append(out, c.lines[n%keepLines])
	}
	return out, int(first - from)
}

// sink counts what an instance emits and checks the data of the names
// ABI.md §4 gives a meaning: the host has already dropped what is not JSON,
// but a "dtmf" whose data is a number is valid JSON and still useless to a
// client.
type sink struct {
	emits int
	// bad describes the first few distinct emits of well-known names with
	// the wrong data; badCount counts them all.
	bad      []string
	badCount int
}

// Emit implements plugin.Sink.
func (s *sink) Emit(_, name string, data []byte) {
	s.emits++
	if why := wellKnownData(name, data); why != "" {
		s.badCount++
		if len(s.bad) < 3 && !slices.Contains(s.bad, why) {
			s.bad = append(s.bad, why)
		}
	}
}

// wellKnownData says what is wrong with the data of an emit whose name ABI.md
// §4 defines, or "".
func wellKnownData(name string, data []byte) string {
	data = bytes.TrimSpace(data)
	switch name {
	case abi.EmitClear:
		if len(data) > 0 {
			return fmt.Sprintf("emit clear carries no data (ABI.md §4), got %s", excerpt(data))
		}
	case abi.EmitSpeechStart, abi.EmitSpeechEnd:
		if len(data) > 0 && data[0] != '{' {
			return fmt.Sprintf("emit %s carries no data or a JSON object (ABI.md §4), got %s", name, excerpt(data))
		}
	case abi.EmitDTMF:
		key, err := strconv.Unquote(string(data))
		if err != nil || data[0] != '"' || len(key) != 1 || !strings.Contains("0123456789*#ABCD", key) {
			return fmt.Sprintf(`emit dtmf carries the key as a JSON string such as "5" (ABI.md §4), got %s`, excerpt(data))
		}
	}
	return ""
}

func excerpt(b []byte) string {
	if len(b) == 0 {
		return "no data"
	}
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}

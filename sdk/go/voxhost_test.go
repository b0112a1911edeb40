//go:build !wasm

// The SDK is tested natively: host_other.go stands in for the host.

package voxhost

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"unsafe"
)

func TestParseConfigReadsMembers(t *testing.T) {
	c, err := ParseConfig([]byte(` {"rate_hz": 5, "depth":0.8, "name":"a\"b\\c\u00e9\ud83d\ude00\ud800x",
		"on":true, "off":false, "none":null, "params":{"lang":"en","n":[1,{"x":[]}]}, "list":[1,2],
		"big":-1.5e3, "dup":1, "dup":2} `))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := c.Number("rate_hz"); !ok || v != 5 {
		t.Fatalf("rate_hz = %v %v", v, ok)
	}
	if v, ok := c.Number("depth"); !ok || v != 0.8 {
		t.Fatalf("depth = %v %v", v, ok)
	}
	if v, ok := c.Number("big"); !ok || v != -1500 {
		t.Fatalf("big = %v %v", v, ok)
	}
	if v, ok := c.Number("dup"); !ok || v != 2 {
		t.Fatalf("dup = %v %v: the last duplicate must win", v, ok)
	}
	if v, ok := c.String("name"); !ok || v != "a\"b\\cé😀\uFFFDx" {
		t.Fatalf("name = %q %v", v, ok)
	}
	if v, ok := c.Bool("on"); !ok || !v {
		t.Fatalf("on = %v %v", v, ok)
	}
	if v, ok := c.Bool("off"); !ok || v {
		t.Fatalf("off = %v %v", v, ok)
	}
	if c.Kind("none") != Null || c.Kind("list") != Array || c.Kind("missing") != Absent || !c.Has("none") {
		t.Fatal("kinds are wrong")
	}
	if _, ok := c.Number("name"); ok {
		t.Fatal("a string read as a number")
	}
	params, ok := c.Object("params")
	if lang, _ := params.String("lang"); !ok || lang != "en" {
		t.Fatalf("params = %+v %v", params, ok)
	}
	if raw, _ := c.Raw("list"); raw != "[1,2]" {
		t.Fatalf("raw list = %q", raw)
	}
	if got := strings.Join(c.Keys(), ","); got != "rate_hz,depth,name,on,off,none,params,list,big,dup,dup" {
		t.Fatalf("keys = %s", got)
	}
}

func TestParseConfigRejectsWhatEncodingJSONRejects(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `"x"`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1}x`, `{a:1}`, `{"a":+1}`,
		`{"a":.5}`, `{"a":1.}`, `{"a":01}`, `{"a":1e}`, `{"a":0x1}`, `{"a":tru}`, `{"a":"x` + "\n" + `"}`,
		`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":[1,]}`, `{"a":{"b"}}`, `{"a":1e999}`, `{"a":"x}`,
		`{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	} {
		if _, err := ParseConfig([]byte(in)); err == nil {
			t.Errorf("ParseConfig(%q) succeeded", in)
		}
	}
	for _, in := range []string{`{}`, ` { } `, `{"a":[]}`, `{"a":-0.0e+0}`, `{"":1}`} {
		if _, err := ParseConfig([]byte(in)); err != nil {
			t.Errorf("ParseConfig(%q): %v", in, err)
		}
	}
}

func TestNumbersParseAsEncodingJSONDoes(t *testing.T) {
	for _, text := range []string{"0.1", "4", "0.8", "19.999999999999996", "2.2250738585072014e-308", "1e-400", "123456789012345678901234567890"} {
		c, err := ParseConfig([]byte(`{"x":` + text + `}`))
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		var want struct{ X float64 }
		if err := json.Unmarshal([]byte(`{"x":`+text+`}`), &want); err != nil {
			t.Fatal(err)
		}
		if got, _ := c.Number("x"); math.Float64bits(got) != math.Float64bits(want.X) {
			t.Errorf("%s = %v, encoding/json says %v", text, got, want.X)
		}
	}
}

func TestNumberIn(t *testing.T) {
	c, _ := ParseConfig([]byte(`{"depth":1.5,"rate":"fast","ok":0.25}`))
	if v, err := c.NumberIn("absent", 4, 0, 10); v != 4 || err != nil {
		t.Fatalf("absent = %v %v", v, err)
	}
	if v, err := c.NumberIn("ok", 4, 0, 1); v != 0.25 || err != nil {
		t.Fatalf("ok = %v %v", v, err)
	}
	if _, err := c.NumberIn("depth", 0.5, 0, 1); err == nil || err.Error() != "depth must be between 0 and 1, got 1.5" {
		t.Fatalf("depth: %v", err)
	}
	if _, err := c.NumberIn("rate", 4, 0.1, 20); err == nil || err.Error() != "rate must be a number, got a string" {
		t.Fatalf("rate: %v", err)
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"#", `a"b\c`, "tab\there\nnl\x01", "é😀"} {
		out := AppendJSONString([]byte("x"), s)
		var back string
		if err := json.Unmarshal(out[1:], &back); err != nil || back != s {
			t.Errorf("%q -> %s -> %q %v", s, out, back, err)
		}
	}
}

type fake struct {
	rate    uint32
	initErr error
	events  []Event
}

func (f *fake) Process(s []int16) int {
	for i := range s {
		s[i] = -s[i]
	}
	return len(s)
}

func (f *fake) Init(cfg Config) error {
	if f.initErr != nil {
		return f.initErr
	}
	if r, ok := cfg.Number("rate"); ok {
		f.rate = uint32(r)
	}
	return nil
}

func (f *fake) Rate(in uint32) (uint32, error) {
	if in != 8000 {
		return 0, errors.New("only 8 kHz")
	}
	return max(in, f.rate), nil
}

func (f *fake) Event(ev Event) int {
	f.events = append(f.events, ev)
	if ev.Kind == EventFlush {
		copy(ev.Buffer(), []int16{7, 8, 9})
		return 3
	}
	return 0
}

type plain struct{}

func (plain) Process(s []int16) int { return len(s) }

// withPlugin registers p for one test, capturing the log.
func withPlugin(t *testing.T, p Plugin) *[]string {
	t.Helper()
	var logs []string
	registered, capacity = p, 0
	logHook = func(level int32, msg string) { logs = append(logs, msg) }
	t.Cleanup(func() { registered, capacity = nil, 0 })
	return &logs
}

func writeConfig(s string) int32 {
	copy(frameBytes(), s)
	return int32(len(s))
}

func TestExportsDriveThePlugin(t *testing.T) {
	f := &fake{}
	logs := withPlugin(t, f)
	if voxBuffer(BufferBytes+2) != 0 || voxBuffer(-1) != 0 {
		t.Fatal("vox_buffer accepted a capacity it cannot provide")
	}
	voxBuffer(1600)
	if addr := uintptr(unsafe.Pointer(&frame()[0])); addr%16 != 0 || voxBuffer(1600) != int32(addr) {
		t.Fatalf("buffer at %#x: not 16-byte aligned or not what vox_buffer returns", addr)
	}
	if st := voxInit(writeConfig(`{"rate":16000}`)); st != StatusOK || f.rate != 16000 {
		t.Fatalf("init = %d, rate %d", st, f.rate)
	}
	if out := voxRate(8000); out != 16000 {
		t.Fatalf("rate(8000) = %d", out)
	}
	if out := voxRate(44100); out != StatusBadRate || (*logs)[0] != "only 8 kHz" {
		t.Fatalf("rate(44100) = %d, logs %q", out, *logs)
	}
	s := frame()
	s[0], s[1] = 5, -6
	if n := voxProcess(2); n != 2 || s[0] != -5 || s[1] != 6 {
		t.Fatalf("process = %d, samples %v", n, s[:2])
	}
	if voxProcess(0) != StatusBadLength || voxProcess(801) != StatusBadLength {
		t.Fatal("process accepted a length outside the buffer")
	}
	if n := voxEvent(EventFlush, 0); n != 3 || s[2] != 9 {
		t.Fatalf("flush = %d", n)
	}
	if voxEvent(EventDTMF, '#') != 0 || f.events[1].Key() != '#' {
		t.Fatalf("events = %+v", f.events)
	}
	voxInit(writeConfig(`{"rate":`))
	f.initErr = errors.New("depth must be between 0 and 1, got 2")
	if st := voxInit(writeConfig(`{}`)); st != StatusBadConfig {
		t.Fatalf("failing init = %d", st)
	}
	want := []string{"only 8 kHz", "config: invalid JSON: expected a value at the end", "depth must be between 0 and 1, got 2"}
	if strings.Join(*logs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("logs = %q, want %q", *logs, want)
	}
}

func TestPluginWithoutOptionalInterfaces(t *testing.T) {
	logs := withPlugin(t, plain{})
	voxBuffer(1600)
	if voxInit(writeConfig(` {} `)) != StatusOK || voxRate(16000) != 16000 || voxEvent(EventFlush, 0) != 0 || voxEvent(99, 1) != 0 {
		t.Fatal("defaults are wrong")
	}
	if voxInit(writeConfig(`{"gain":2}`)) != StatusBadConfig || len(*logs) != 1 {
		t.Fatalf("a config for a plugin without Init was accepted; logs %q", *logs)
	}
}

func TestNothingRegistered(t *testing.T) {
	logs := withPlugin(t, nil)
	registered = nil
	if voxProcess(1) != StatusBadState || len(*logs) != 1 {
		t.Fatalf("logs = %q", *logs)
	}
}

func TestProcessDoesNotAllocate(t *testing.T) {
	withPlugin(t, &fake{})
	voxBuffer(1600)
	if n := testing.AllocsPerRun(100, func() { voxProcess(160) }); n != 0 {
		t.Fatalf("vox_process allocates %v times", n)
	}
}

func TestAppendScaledAndFixed(t *testing.T) {
	for _, c := range []struct {
		v        int64
		decimals int
		want     string
	}{{-1234, 2, "-12.34"}, {5, 3, "0.005"}, {-5, 2, "-0.05"}, {0, 2, "0.00"}, {42, 0, "42"},
		{math.MinInt64, 0, "-9223372036854775808"}, {math.MaxInt64, 18, "9.223372036854775807"}} {
		if got := string(AppendScaled(nil, c.v, c.decimals)); got != c.want {
			t.Errorf("AppendScaled(%d, %d) = %s, want %s", c.v, c.decimals, got, c.want)
		}
	}
	for _, c := range []struct {
		v        float64
		decimals int
		want     string
	}{{-3.14159, 2, "-3.14"}, {2.5, 0, "3"}, {-2.5, 0, "-3"}, {0.125, 2, "0.13"}, {-0.004, 2, "0.00"},
		{math.Copysign(0, -1), 1, "0.0"}, {1.005, 2, "1.00"}, {123456.789, 9, "123456.789000000"},
		{math.NaN(), 2, "null"}, {math.Inf(-1), 2, "null"}, {1e18, 0, "null"}, {-6.0206, 2, "-6.02"}} {
		if got := string(AppendFixed(nil, c.v, c.decimals)); got != c.want {
			t.Errorf("AppendFixed(%v, %d) = %s, want %s", c.v, c.decimals, got, c.want)
		}
	}
	buf := make([]byte, 0, 32)
	if n := testing.AllocsPerRun(100, func() { buf = AppendFixed(AppendScaled(buf[:0], 123, 1), -1.5, 3) }); n != 0 {
		t.Errorf("%v allocations, want none", n)
	}
}

func TestDecibels(t *testing.T) {
	if g := DBToGain(-6); math.Abs(g-0.501187233627) > 1e-12 {
		t.Errorf("DBToGain(-6) = %v", g)
	}
	if db := GainToDB(0.5); math.Abs(db+6.020599913279) > 1e-12 {
		t.Errorf("GainToDB(0.5) = %v", db)
	}
	if !math.IsInf(GainToDB(0), -1) || DBToGain(0) != 1 || GainToDB(1) != 0 {
		t.Error("0 dB is a gain of 1, a gain of 0 is -Inf dB")
	}
}

func TestUnknownAndCheckKeys(t *testing.T) {
	c, err := ParseConfig([]byte(`{"gain_db":-6,"mode":"x","nested":{"q":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := c.UnknownKey("gain_db", "mode", "nested"); ok {
		t.Errorf("UnknownKey found %q among the allowed", k)
	}
	if k, ok := c.UnknownKey("gain_db"); !ok || k != "mode" {
		t.Errorf("UnknownKey = %q, %v, want mode", k, ok)
	}
	if err := c.CheckKeys("gain_db", "nested"); err == nil || err.Error() != `unknown config key "mode"` {
		t.Errorf("CheckKeys = %v", err)
	}
	if err := c.CheckKeys(c.Keys()...); err != nil {
		t.Error(err)
	}
}

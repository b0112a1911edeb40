package voxhost

import (
	"math"
	"strconv"
)

// FullScale is the full scale of a sample: levels in dBFS are relative to
// 32767, so a peak p is GainToDB(p / FullScale) dBFS.
const FullScale = 32767.0

// DBToGain is the linear gain of a level in dB: 10^(db/20), e.g. 0.5012 for
// -6 dB.
func DBToGain(db float64) float64 { return math.Pow(10, db/20) }

// GainToDB is the level in dB of a linear gain: 20 log10(gain); -Inf for 0.
func GainToDB(gain float64) float64 { return 20 * math.Log10(gain) }

// pow10 are the powers of ten AppendFixed scales by, exact in float64.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// AppendScaled appends v / 10^decimals to dst with exactly decimals digits
// after the point (0 to 18; no point for 0): AppendScaled(b, -1234, 2)
// appends -12.34, AppendScaled(b, 5, 3) 0.005. Integer arithmetic only, so
// every language's SDK writes the same text. It allocates only if dst
// lacks the room.
func AppendScaled(dst []byte, v int64, decimals int) []byte {
	decimals = min(max(decimals, 0), 18)
	var digits [24]byte
	n := 0
	u := uint64(v)
	if v < 0 {
		u = -u
	}
	for u != 0 || n <= decimals {
		digits[n] = byte('0' + u%10)
		u /= 10
		n++
	}
	if v < 0 {
		dst = append(dst, '-')
	}
	for n > 0 {
		n--
		dst = append(dst, digits[n])
		if n == decimals && n > 0 {
			dst = append(dst, '.')
		}
	}
	return dst
}

// AppendFixed appends v rounded to decimals digits after the point (0 to 9),
// e.g. -3.14 for (-3.14159, 2): r = floor(|v| * 10^decimals + 0.5) in
// float64, written as AppendScaled writes it (negative if v is, unless r is
// 0). NaN, infinities and |v| * 10^decimals >= 1e18 are written as null.
// The other SDKs use the same arithmetic, so they write the same text
// (strconv.AppendFloat rounds the exact decimal value instead, and differs
// at ties such as 0.125 to 2 digits).
func AppendFixed(dst []byte, v float64, decimals int) []byte {
	decimals = min(max(decimals, 0), 9)
	x := math.Abs(v) * pow10[decimals]
	if !(x < 1e18) {
		return append(dst, "null"...)
	}
	r := int64(math.Floor(float64(x + 0.5)))
	if v < 0 {
		r = -r
	}
	return AppendScaled(dst, r, decimals)
}

// UnknownKey is the first key of the config that is not in allowed, if
// there is one: with it a typo'd key is an error rather than silently the
// default.
func (c Config) UnknownKey(allowed ...string) (string, bool) {
next:
	for _, m := range c.members {
		for _, a := range allowed {
			if m.key == a {
				continue next
			}
		}
		return m.key, true
	}
	return "", false
}

// CheckKeys is UnknownKey as Init uses it: nil, or an error such as
// `unknown config key "gain"`, which the SDK logs when Init returns it.
func (c Config) CheckKeys(allowed ...string) error {
	if key, ok := c.UnknownKey(allowed...); ok {
		return sdkError("unknown config key " + strconv.Quote(key))
	}
	return nil
}

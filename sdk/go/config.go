package voxhost

import (
	"strconv"
	"unicode/utf8"
)

// Config is a parsed JSON object: the plugin's configuration (Initer.Init),
// or the call metadata (ParseConfig of Event.Data). Its members are read by
// key; nested objects and arrays are kept as JSON text (Raw, Object).
//
// The SDK parses JSON itself instead of using encoding/json, which would pull
// reflect into every plugin (hundreds of KiB more for the standard Go
// compiler, and reflection TinyGo supports only in part). Strings are copied
// out of the buffer, so a Config stays valid after Init returns.
type Config struct {
	members []member
}

type member struct {
	key  string
	kind Kind
	// raw is the value's JSON text; str is a string's decoded value; num a
	// number's value (also 1 for true).
	raw, str string
	num      float64
}

// Kind is the JSON type of a member's value.
type Kind uint8

// The kinds of Config values. Absent is the kind of a key that is not there.
const (
	Absent Kind = iota
	Null
	Bool
	Number
	String
	Object
	Array
)

// String names the kind as error messages do: "a number", "an object".
func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "a boolean"
	case Number:
		return "a number"
	case String:
		return "a string"
	case Object:
		return "an object"
	case Array:
		return "an array"
	}
	return "absent"
}

func (c Config) lookup(key string) *member {
	// The last of duplicate keys wins, as in encoding/json.
	for i := len(c.members) - 1; i >= 0; i-- {
		if c.members[i].key == key {
			return &c.members[i]
		}
	}
	return nil
}

// Len is the number of members.
func (c Config) Len() int { return len(c.members) }

// Keys lists the members' keys in the order they appear.
func (c Config) Keys() []string {
	keys := make([]string, len(c.members))
	for i, m := range c.members {
		keys[i] = m.key
	}
	return keys
}

// Kind is the type of key's value, Absent if there is no such key.
func (c Config) Kind(key string) Kind {
	if m := c.lookup(key); m != nil {
		return m.kind
	}
	return Absent
}

// Has reports whether key is present (with any value, even null).
func (c Config) Has(key string) bool { return c.lookup(key) != nil }

// Number is key's value if it is a number; ok is false if key is absent or
// holds another type (see Kind to tell which).
func (c Config) Number(key string) (v float64, ok bool) {
	if m := c.lookup(key); m != nil && m.kind == Number {
		return m.num, true
	}
	return 0, false
}

// String is key's value, unescaped, if it is a string.
func (c Config) String(key string) (v string, ok bool) {
	if m := c.lookup(key); m != nil && m.kind == String {
		return m.str, true
	}
	return "", false
}

// Bool is key's value if it is true or false.
func (c Config) Bool(key string) (v bool, ok bool) {
	if m := c.lookup(key); m != nil && m.kind == Bool {
		return m.num != 0, true
	}
	return false, false
}

// Raw is the JSON text of key's value, whatever its type.
func (c Config) Raw(key string) (json string, ok bool) {
	if m := c.lookup(key); m != nil {
		return m.raw, true
	}
	return "", false
}

// Object parses key's value if it is an object, e.g. the "params" of the
// call metadata.
func (c Config) Object(key string) (Config, bool) {
	if m := c.lookup(key); m != nil && m.kind == Object {
		obj, err := ParseConfig([]byte(m.raw))
		return obj, err == nil
	}
	return Config{}, false
}

// NumberIn reads an optional number in [lo, hi]: def if key is absent, an
// error naming the key if it holds another type or lies out of range. The
// error's text is meant for the log, e.g. "depth must be between 0 and 1,
// got 1.5".
func (c Config) NumberIn(key string, def, lo, hi float64) (float64, error) {
	m := c.lookup(key)
	if m == nil {
		return def, nil
	}
	if m.kind != Number {
		return 0, sdkError(key + " must be a number, got " + m.kind.String())
	}
	if !(m.num >= lo && m.num <= hi) {
		return 0, sdkError(key + " must be between " + formatNumber(lo) + " and " + formatNumber(hi) + ", got " + m.raw)
	}
	return m.num, nil
}

func formatNumber(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// maxDepth bounds the nesting of objects and arrays, so that hostile input
// cannot exhaust the plugin's stack.
const maxDepth = 64

// ParseConfig parses a JSON object (RFC 8259; whitespace around it allowed,
// nothing else). A number is converted as encoding/json and every other
// language's correctly rounded parser does, so a configuration means the
// same to plugins in any SDK language.
func ParseConfig(json []byte) (Config, error) {
	p := parser{s: json}
	p.space()
	if p.peek() != '{' {
		return Config{}, p.fail("the config must be a JSON object")
	}
	var c Config
	p.pos++
	p.space()
	if p.peek() == '}' {
		p.pos++
	} else {
		for {
			p.space()
			if p.peek() != '"' {
				return Config{}, p.fail("expected a member name")
			}
			key, err := p.str()
			if err != nil {
				return Config{}, err
			}
			p.space()
			if p.peek() != ':' {
				return Config{}, p.fail("expected ':' after a member name")
			}
			p.pos++
			p.space()
			m := member{key: key}
			if err := p.value(&m, 1); err != nil {
				return Config{}, err
			}
			c.members = append(c.members, m)
			p.space()
			if p.peek() == ',' {
				p.pos++
				continue
			}
			if p.peek() != '}' {
				return Config{}, p.fail("expected ',' or '}'")
			}
			p.pos++
			break
		}
	}
	p.space()
	if p.pos != len(p.s) {
		return Config{}, p.fail("text after the object")
	}
	return c, nil
}

type parser struct {
	s   []byte
	pos int
}

func (p *parser) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *parser) space() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) fail(what string) error {
	if p.pos >= len(p.s) {
		return sdkError("invalid JSON: " + what + " at the end")
	}
	return sdkError("invalid JSON: " + what + " at byte " + strconv.Itoa(p.pos))
}

// value parses any JSON value into m (when m is not nil: nested values are
// only checked).
func (p *parser) value(m *member, depth int) error {
	start := p.pos
	var kind Kind
	switch c := p.peek(); {
	case c == '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		kind = String
		if m != nil {
			m.str = s
		}
	case c == '-' || c >= '0' && c <= '9':
		if err := p.number(); err != nil {
			return err
		}
		kind = Number
	case c == '{' || c == '[':
		if err := p.nested(depth); err != nil {
			return err
		}
		kind = Object
		if c == '[' {
			kind = Array
		}
	case p.word("true"):
		kind = Bool
		if m != nil {
			m.num = 1
		}
	case p.word("false"):
		kind = Bool
	case p.word("null"):
		kind = Null
	default:
		return p.fail("expected a value")
	}
	if m != nil {
		m.kind, m.raw = kind, string(p.s[start:p.pos])
		if kind == Number {
			v, err := strconv.ParseFloat(m.raw, 64)
			if err != nil {
				p.pos = start
				return p.fail("number out of range")
			}
			m.num = v
		}
	}
	return nil
}

func (p *parser) word(w string) bool {
	if len(p.s)-p.pos >= len(w) && string(p.s[p.pos:p.pos+len(w)]) == w {
		p.pos += len(w)
		return true
	}
	return false
}

// number checks the JSON number grammar, which is stricter than
// strconv.ParseFloat's (no "+1", ".5", "1.", "0x10", "Inf").
func (p *parser) number() error {
	digits := func() int {
		n := 0
		for c := p.peek(); c >= '0' && c <= '9'; c = p.peek() {
			p.pos++
			n++
		}
		return n
	}
	if p.peek() == '-' {
		p.pos++
	}
	if p.peek() == '0' {
		p.pos++
	} else if digits() == 0 {
		return p.fail("expected a digit")
	}
	if p.peek() == '.' {
		p.pos++
		if digits() == 0 {
			return p.fail("expected a digit after '.'")
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.pos++
		if c := p.peek(); c == '+' || c == '-' {
			p.pos++
		}
		if digits() == 0 {
			return p.fail("expected a digit in the exponent")
		}
	}
	return nil
}

func (p *parser) nested(depth int) error {
	if depth >= maxDepth {
		return p.fail("nested too deeply")
	}
	object := p.peek() == '{'
	end := byte(']')
	if object {
		end = '}'
	}
	p.pos++
	p.space()
	if p.peek() == end {
		p.pos++
		return nil
	}
	for {
		p.space()
		if object {
			if p.peek() != '"' {
				return p.fail("expected a member name")
			}
			if _, err := p.str(); err != nil {
				return err
			}
			p.space()
			if p.peek() != ':' {
				return p.fail("expected ':' after a member name")
			}
			p.pos++
			p.space()
		}
		if err := p.value(nil, depth+1); err != nil {
			return err
		}
		p.space()
		switch p.peek() {
		case ',':
			p.pos++
		case end:
			p.pos++
			return nil
		default:
			return p.fail("expected ',' or '" + string(end) + "'")
		}
	}
}

// str parses a string at p.pos (at its opening quote) and returns its value.
// Like encoding/json, it turns an unpaired surrogate escape into U+FFFD.
func (p *parser) str() (string, error) {
	p.pos++
	start := p.pos
	// Fast path: no escapes, the value is the text between the quotes.
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == '"' {
			s := string(p.s[start:p.pos])
			p.pos++
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.fail("control character in a string")
		}
		p.pos++
	}
	buf := append([]byte(nil), p.s[start:p.pos]...)
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return "", p.fail("control character in a string")
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		p.pos++
		esc := p.peek()
		p.pos++
		switch esc {
		case '"', '\\', '/':
			buf = append(buf, esc)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.fail("expected 4 hex digits after \\u")
			}
			if r >= 0xD800 && r < 0xDC00 {
				// A high surrogate: a low one must follow to make one rune.
				save := p.pos
				if p.word(`\u`) {
					if lo, ok := p.hex4(); ok && lo >= 0xDC00 && lo < 0xE000 {
						r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					} else {
						p.pos, r = save, utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			} else if r >= 0xDC00 && r < 0xE000 {
				r = utf8.RuneError
			}
			buf = utf8.AppendRune(buf, r)
		default:
			p.pos--
			return "", p.fail("invalid escape in a string")
		}
	}
	return "", p.fail("unterminated string")
}

func (p *parser) hex4() (rune, bool) {
	if len(p.s)-p.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.s[p.pos : p.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

// AppendJSONString appends s to dst as a JSON string, quotes included, for
// building Emit payloads without encoding/json: it escapes '"', '\\' and
// control characters, and copies everything else (UTF-8) as it is.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

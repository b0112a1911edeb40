package transport

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// maxDepth bounds how deeply the scanner follows nested values, so that a
// hostile message cannot drive it into deep recursion. Real messages nest
// three levels.
const maxDepth = 64

// scanner walks one JSON text in place. It builds no values and so
// allocates nothing: callers pick out the members they need as string
// tokens viewing the text, and everything else is only checked for being
// well formed. The first syntax error sticks and stops the walk.
type scanner struct {
	buf   []byte
	pos   int
	depth int
	err   string // what is wrong; empty while the text is well formed so far
	errAt int
}

// fail records a syntax error at the current position, unless one is
// already recorded, and moves to the end so that every loop stops.
func (s *scanner) fail(what string) {
	if s.err == "" {
		s.err, s.errAt = what, s.pos
		if s.pos >= len(s.buf) {
			s.err = "message ends early, " + what
		}
	}
	s.pos = len(s.buf)
}

// peek skips white space and returns the next byte, or 0 at the end.
func (s *scanner) peek() byte {
	for s.pos < len(s.buf) {
		switch c := s.buf[s.pos]; c {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return c
		}
	}
	return 0
}

// object enters the object that comes next, or returns false and consumes
// nothing if the next value is not an object.
func (s *scanner) object() bool {
	if s.peek() != '{' {
		return false
	}
	s.enter()
	return true
}

func (s *scanner) enter() {
	s.pos++
	if s.depth++; s.depth > maxDepth {
		s.fail(fmt.Sprintf("values nested deeper than %d levels", maxDepth))
	}
}

// member reads the key and colon of member i (from 0) of the object being
// walked and returns the key as a string token; the caller must then
// consume the value. It returns false, having left the object, at its
// closing brace or on a syntax error.
func (s *scanner) member(i int) ([]byte, bool) {
	c := s.peek()
	if c == '}' {
		s.pos++
		s.depth--
		return nil, false
	}
	if i > 0 {
		if c != ',' {
			s.fail("expected ',' or '}' after an object member")
			return nil, false
		}
		s.pos++
		c = s.peek()
	}
	if c != '"' {
		s.fail("expected a string key")
		return nil, false
	}
	key := s.str()
	if s.peek() != ':' {
		s.fail("expected ':' after an object key")
		return nil, false
	}
	s.pos++
	return key, s.err == ""
}

// members walks the object that comes next, calling member with each key;
// member must consume the value. It returns false, having consumed
// nothing, if the next value is not an object: a caller walking a member
// skips it then, and one walking a whole message leaves it to finish.
func (s *scanner) members(member func(key []byte)) bool {
	if !s.object() {
		return false
	}
	for i := 0; ; i++ {
		key, ok := s.member(i)
		if !ok {
			return true
		}
		member(key)
	}
}

// dispatchError says why a scanned message cannot be dispatched on its
// discriminating member (Twilio's and raw's "event", OpenAI's "type"), or
// returns nil: reason is finish's, missing the error for a message without
// the member, has and value what the scan found of it.
func dispatchError(protocol, reason, key, missing string, has bool, value []byte) error {
	switch {
	case reason != "":
		return protocolErrorf(protocol, "%s", reason)
	case !has:
		return protocolErrorf(protocol, "%s", missing)
	case value == nil:
		return protocolErrorf(protocol, "%q is not a string", key)
	}
	return nil
}

// text consumes the next value and returns it as a string token, or
// returns false if it is not a string.
func (s *scanner) text() ([]byte, bool) {
	if s.peek() != '"' {
		s.skip()
		return nil, false
	}
	return s.str(), s.err == ""
}

// str consumes the string at the current position and returns its token,
// quotes included.
func (s *scanner) str() []byte {
	start := s.pos
	s.pos++
	for s.pos < len(s.buf) {
		// Plain characters are nearly all of a message (a media payload is
		// most of it): they are passed over eight at a time, then one at a
		// time up to the next that is not.
		buf, i := s.buf, s.pos
		for i+8 <= len(buf) && plainWord(binary.LittleEndian.Uint64(buf[i:])) {
			i += 8
		}
		for i < len(buf) && plainInString[buf[i]] {
			i++
		}
		if s.pos = i; i == len(buf) {
			break
		}
		switch buf[i] {
		case '"':
			s.pos++
			return s.buf[start:s.pos]
		case '\\':
			s.escape()
		default:
			s.fail("control character in a string")
		}
	}
	s.fail("unterminated string")
	return nil
}

func (s *scanner) escape() {
	if s.pos+1 >= len(s.buf) {
		s.pos = len(s.buf)
		return // str reports the unterminated string
	}
	switch s.buf[s.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.pos += 2
	case 'u':
		if s.pos+6 > len(s.buf) || !isHex(s.buf[s.pos+2]) || !isHex(s.buf[s.pos+3]) || !isHex(s.buf[s.pos+4]) || !isHex(s.buf[s.pos+5]) {
			s.fail(`\u escape without four hex digits`)
			return
		}
		s.pos += 6
	default:
		s.fail("invalid escape in a string")
	}
}

// skip consumes the next value, whatever it is.
func (s *scanner) skip() {
	switch c := s.peek(); {
	case c == '{':
		s.enter()
		for i := 0; ; i++ {
			if _, ok := s.member(i); !ok {
				return
			}
			s.skip()
		}
	case c == '[':
		s.enter()
		if s.peek() == ']' {
			s.pos++
			s.depth--
			return
		}
		for s.err == "" {
			s.skip()
			switch s.peek() {
			case ',':
				s.pos++
			case ']':
				s.pos++
				s.depth--
				return
			default:
				s.fail("expected ',' or ']' after an array element")
			}
		}
	case c == '"':
		s.str()
	case c == '-' || isDigit(c):
		s.number()
	case c == 't':
		s.literal("true")
	case c == 'f':
		s.literal("false")
	case c == 'n':
		s.literal("null")
	default:
		s.fail("expected a value")
	}
}

func (s *scanner) number() {
	b, i := s.buf, s.pos
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		return i > start
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		s.pos = i
		s.fail("invalid number")
		return
	}
	if i < len(b) && b[i] == '.' {
		if i++; !digits() {
			s.pos = i
			s.fail("invalid number")
			return
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			s.pos = i
			s.fail("invalid number")
			return
		}
	}
	s.pos = i
}

func (s *scanner) literal(word string) {
	if len(s.buf)-s.pos < len(word) || string(s.buf[s.pos:s.pos+len(word)]) != word {
		s.fail("invalid literal, expected " + word)
		return
	}
	s.pos += len(word)
}

// finish ends the walk of a message: the object its caller walked member
// by member if isObject, else whatever value it holds. It returns why the
// message is not exactly one well-formed JSON object, or "" if it is.
func (s *scanner) finish(isObject bool) (reason string) {
	if !isObject {
		s.skip()
	}
	if s.peek(); s.pos < len(s.buf) {
		s.fail("unexpected data after the JSON value")
	}
	switch {
	case s.err != "":
		return fmt.Sprintf("invalid JSON at byte %d: %s", s.errAt, s.err)
	case !isObject:
		return "message is JSON but not an object"
	}
	return ""
}

// unescapeAt returns the character at body[i] of a well-formed string
// token's body, with any escape resolved, and the index after it. A \u
// escape for a non-ASCII character yields 0x80: callers only compare with
// ASCII words or decode base64, and such a character matches neither.
func unescapeAt(body []byte, i int) (byte, int) {
	c := body[i]
	if c != '\\' {
		return c, i + 1
	}
	switch c = body[i+1]; c {
	case 'b':
		return '\b', i + 2
	case 'f':
		return '\f', i + 2
	case 'n':
		return '\n', i + 2
	case 'r':
		return '\r', i + 2
	case 't':
		return '\t', i + 2
	case 'u':
		r := 0
		for _, h := range body[i+2 : i+6] {
			r = r<<4 | hexValue(h)
		}
		if r >= utf8.RuneSelf {
			return utf8.RuneSelf, i + 6
		}
		return byte(r), i + 6
	}
	return c, i + 2 // '"', '\\' or '/'
}

// plainInString holds the bytes that stand for themselves in a JSON
// string: all but control characters, the quote and the backslash.
var plainInString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainWord reports whether the eight bytes of x all stand for themselves
// in a JSON string, as plainInString says, testing them at once: a byte
// below 0x20, or one that XORed with '"' or '\\' is zero, sets the high
// bit of some byte of the matching term (the tests of Bit Twiddling Hacks,
// hasless and haszero, exact as a whole word's verdict).
func plainWord(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, b := x^(ones*'"'), x^(ones*'\\')
	return ((x-ones*0x20)&^x|(q-ones)&^q|(b-ones)&^b)&highs == 0
}

// textIs reports whether the string token q stands for the ASCII word want.
func textIs(q []byte, want string) bool {
	body, j := q[1:len(q)-1], 0
	// An escape is longer than the character it stands for, so a body no
	// longer than want matches only as it is, and a longer one only with
	// an escape: the dispatch on keys and kinds compares bytes.
	if len(body) <= len(want) || bytes.IndexByte(body, '\\') < 0 {
		return string(body) == want
	}
	for i := 0; i < len(body); j++ {
		var c byte
		if c, i = unescapeAt(body, i); j >= len(want) || c != want[j] {
			return false
		}
	}
	return j == len(want)
}

// appendText appends the body of the string token q with escapes resolved
// as unescapeAt does.
func appendText(dst, q []byte) []byte {
	body := q[1 : len(q)-1]
	for i := 0; i < len(body); {
		var c byte
		c, i = unescapeAt(body, i)
		dst = append(dst, c)
	}
	return dst
}

// digitOf returns the DTMF key the string token q holds, if it holds
// exactly one.
func digitOf(q []byte) (byte, bool) {
	body := q[1 : len(q)-1]
	if len(body) == 0 {
		return 0, false
	}
	c, next := unescapeAt(body, 0)
	return c, next == len(body) && validDigit(c)
}

// appendQuoted appends s as a JSON string. Invalid UTF-8 becomes U+FFFD:
// a WebSocket peer must fail the connection on a text message that is not
// UTF-8, and a name or id must not be able to end the call.
func appendQuoted(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		size := 1
		if c >= utf8.RuneSelf {
			var r rune
			if r, size = utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		default:
			if c >= utf8.RuneSelf {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendData appends a plugin's event data: as is when it is the JSON value
// the ABI asks for, else as a JSON string of its text, so that the message
// stays valid JSON and UTF-8 whatever a plugin emits.
func appendData(dst, data []byte) []byte {
	if utf8.Valid(data) && json.Valid(data) {
		return append(dst, data...)
	}
	return appendQuoted(dst, string(data))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f' }

func hexValue(c byte) int {
	if isDigit(c) {
		return int(c - '0')
	}
	return int(c|0x20-'a') + 10
}

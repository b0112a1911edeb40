package transport

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// URL templates let a route's upstream URL carry the call, so the bot knows
// which call it serves: "wss://bot.example/ws/{call_id}?route={route}".
// Placeholders are {call_id}, {stream_id}, {account_id}, {route} and
// {param.NAME} (a caller custom parameter, empty when absent); each value
// is escaped for where it stands (path or query).
//
// Most of these values come from the caller (a carrier's ids, the raw
// protocol's query string), and the dial carries the route's credentials
// (its headers), so caller data may only ever pick *what* is asked of the
// configured bot, never *which* bot: placeholders may stand in the path and
// query only, and no value may make a dot segment ("." or "..") in the
// path, which a proxy that normalises paths would resolve to another
// resource.

// CheckURLTemplate says why tmpl is not a usable upstream URL template, or
// nil: it must be a ws:// or wss:// URL whose braces all name a
// placeholder, none of them in the scheme, userinfo, host or port, and
// whose path has no dot segment.
func CheckURLTemplate(tmpl string) error {
	if part, name, ok := placeholderBeforePath(tmpl); ok {
		return fmt.Errorf("upstream url %q: placeholder {%s} in the %s; placeholders may stand only in the path and query, so that a caller cannot choose where the bot dial goes", tmpl, name, part)
	}
	// A % that is not followed by two hex digits of the template itself
	// would take its escape's digits from a caller's value ("%4{call_id}"),
	// or make a URL that does not parse.
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] == '%' && (i+2 >= len(tmpl) || !isHex(tmpl[i+1]) || !isHex(tmpl[i+2])) {
			return fmt.Errorf("upstream url %q: a %% that does not begin an escape (%%XX) at byte %d", tmpl, i)
		}
	}
	// Every placeholder is probed with a value, so that the path the
	// template itself writes is checked, not one an empty value makes.
	probe, err := expandURL(tmpl, CallInfo{CallID: "c", StreamID: "s", AccountID: "a", Route: "r"}, "p")
	if err != nil {
		return err
	}
	if err := checkFilled(tmpl, probe); err != nil {
		return fmt.Errorf("upstream url %q: %w", tmpl, err)
	}
	u, err := url.Parse(probe)
	if err != nil {
		return fmt.Errorf("upstream url %q: %v", tmpl, err)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return fmt.Errorf("upstream url %q: scheme must be ws or wss, not %q", tmpl, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("upstream url %q has no host", tmpl)
	}
	return nil
}

// ExpandURL fills tmpl's placeholders from info. tmpl passed
// CheckURLTemplate. The error says why the filled URL must not be dialled:
// the caller's data made a dot segment of a path segment, or (defence in
// depth, should a template have skipped CheckURLTemplate) the URL no longer
// names the template's scheme, userinfo, host and port. It never quotes the
// URL, which may carry a secret in its query.
func ExpandURL(tmpl string, info CallInfo) (string, error) {
	s, err := expandURL(tmpl, info, "")
	if err != nil {
		return "", errors.New("the upstream url template is invalid")
	}
	if err := checkFilled(tmpl, s); err != nil {
		return "", err
	}
	return s, nil
}

// checkFilled says why filled, tmpl with its placeholders filled in, must
// not be dialled, or nil.
func checkFilled(tmpl, filled string) error {
	// The authority is literal text of the template, so the filled URL
	// begins with the same bytes and its path begins right after them.
	n := pathStart(tmpl)
	if pathStart(filled) != n || filled[:n] != tmpl[:n] {
		return errors.New("the filled url's scheme, userinfo, host or port differs from the template's")
	}
	path := filled[n:]
	if end := strings.IndexAny(path, "?#"); end >= 0 {
		path = path[:end]
	}
	for seg := range strings.SplitSeq(path, "/") {
		if isDotSegment(seg) {
			return fmt.Errorf("the path would have a dot segment (%q), which a proxy may resolve to another path", seg)
		}
	}
	return nil
}

// pathStart is the index in a URL (or template) where its path, query or
// fragment begins: the end of "scheme://authority", or 0 when it has no
// "://" (url.Parse then finds no host, which CheckURLTemplate refuses).
func pathStart(s string) int {
	i := strings.Index(s, "://")
	if i < 0 {
		return 0
	}
	i += len("://")
	if end := strings.IndexAny(s[i:], "/?#"); end >= 0 {
		return i + end
	}
	return len(s)
}

// placeholderBeforePath finds a placeholder in tmpl's scheme or authority
// and names the part it stands in.
func placeholderBeforePath(tmpl string) (part, name string, ok bool) {
	n := pathStart(tmpl)
	open := strings.IndexByte(tmpl[:n], '{')
	if open < 0 {
		return "", "", false
	}
	end := strings.IndexByte(tmpl[open:], '}')
	if end < 0 {
		return "", "", false // expandURL reports the unclosed brace
	}
	name = tmpl[open+1 : open+end]
	scheme := strings.Index(tmpl, "://")
	auth := tmpl[scheme+len("://") : n]
	at := open - scheme - len("://") // the placeholder's index in auth
	userEnd := strings.LastIndexByte(auth, '@')
	hostport := auth[userEnd+1:]
	colon := strings.LastIndexByte(hostport, ':')
	if colon < strings.LastIndexByte(hostport, ']') {
		colon = -1 // the colons of an IPv6 literal
	}
	switch {
	case at < 0:
		return "scheme", name, true
	case at < userEnd:
		return "userinfo", name, true
	case colon >= 0 && at > userEnd+1+colon:
		return "port", name, true
	}
	return "host", name, true
}

// isDotSegment says whether a path segment is "." or ".." as a server or
// proxy sees it, "%2E" (either case) decoding to ".".
func isDotSegment(seg string) bool {
	dots := 0
	for len(seg) > 0 {
		switch {
		case seg[0] == '.':
			seg = seg[1:]
		case len(seg) >= 3 && seg[0] == '%' && seg[1] == '2' && (seg[2] == 'e' || seg[2] == 'E'):
			seg = seg[3:]
		default:
			return false
		}
		dots++
	}
	return dots == 1 || dots == 2
}

// expandURL fills tmpl from info; a param absent from info.Params is
// absent (nonempty: for probing).
func expandURL(tmpl string, info CallInfo, absent string) (string, error) {
	var b strings.Builder
	inQuery := false
	for i := 0; i < len(tmpl); {
		c := tmpl[i]
		switch c {
		case '?':
			inQuery = true
		case '}':
			return "", fmt.Errorf("upstream url %q: unmatched } at byte %d", tmpl, i)
		case '{':
			end := strings.IndexByte(tmpl[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("upstream url %q: unclosed { at byte %d", tmpl, i)
			}
			name := tmpl[i+1 : i+end]
			v, ok := placeholder(name, info, absent)
			if !ok {
				return "", fmt.Errorf("upstream url %q: unknown placeholder {%s} (have {call_id}, {stream_id}, {account_id}, {route}, {param.NAME})", tmpl, name)
			}
			if inQuery {
				b.WriteString(url.QueryEscape(v))
			} else {
				b.WriteString(url.PathEscape(v))
			}
			i += end + 1
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), nil
}

func placeholder(name string, info CallInfo, absent string) (string, bool) {
	switch name {
	case "call_id":
		return info.CallID, true
	case "stream_id":
		return info.StreamID, true
	case "account_id":
		return info.AccountID, true
	case "route":
		return info.Route, true
	}
	if p, ok := strings.CutPrefix(name, "param."); ok && p != "" {
		if v, ok := info.Params[p]; ok {
			return v, true
		}
		return absent, true
	}
	return "", false
}

package transport

import (
	"fmt"
	"net/url"
	"strings"
)

// URL templates let a route's upstream URL carry the call, so the bot knows
// which call it serves: "wss://bot.example/ws/{call_id}?route={route}".
// Placeholders are {call_id}, {stream_id}, {account_id}, {route} and
// {param.NAME} (a caller custom parameter, empty when absent); each value
// is escaped for where it stands (path or query).

// CheckURLTemplate says why tmpl is not a usable upstream URL template, or
// nil: it must be a ws:// or wss:// URL whose braces all name a placeholder.
func CheckURLTemplate(tmpl string) error {
	probe, err := expandURL(tmpl, CallInfo{CallID: "c", StreamID: "s", AccountID: "a", Route: "r"})
	if err != nil {
		return err
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
// CheckURLTemplate.
func ExpandURL(tmpl string, info CallInfo) string {
	s, _ := expandURL(tmpl, info)
	return s
}

func expandURL(tmpl string, info CallInfo) (string, error) {
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
			v, ok := placeholder(name, info)
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

func placeholder(name string, info CallInfo) (string, bool) {
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
		return info.Params[p], true
	}
	return "", false
}

package server_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFramesSentWithTheUpgradeRequest: a client may write its first
// WebSocket frames in the same packet as the upgrade request, so net/http
// reads them with the request. The host hands coder/websocket buffers of
// its own at the hijack (conn.go, leanHijack), except then: those bytes are
// in net/http's reader. The first frame must come back as sent, and the
// frames after it too.
func TestFramesSentWithTheUpgradeRequest(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	frames := [][]byte{stamp(1, 0), stamp(1, 1), stamp(1, 2)}
	var first bytes.Buffer
	first.WriteString("GET /ws HTTP/1.1\r\nHost: voxhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	first.Write(maskedBinary(t, frames[0]))
	first.Write(maskedBinary(t, frames[1]))
	if _, err := conn.Write(first.Bytes()); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answered %s", resp.Status)
	}
	if _, err := conn.Write(maskedBinary(t, frames[2])); err != nil {
		t.Fatal(err)
	}
	for i, want := range frames {
		if got := readServerFrame(t, r); !bytes.Equal(got, want) {
			t.Fatalf("frame %d came back as % x…, want % x…", i, got[:8], want[:8])
		}
	}
}

// maskedBinary is payload as a client's binary WebSocket frame (RFC 6455
// §5.2: FIN, opcode 2, masked, a 16-bit length for 126..65535 bytes).
func maskedBinary(t *testing.T, payload []byte) []byte {
	t.Helper()
	var key [4]byte
	if _, err := rand.Read(key[:]); err != nil {
		t.Fatal(err)
	}
	out := []byte{0x82}
	if n := len(payload); n < 126 {
		out = append(out, 0x80|byte(n))
	} else {
		out = append(out, 0x80|126, byte(n>>8), byte(n))
	}
	out = append(out, key[:]...)
	for i, b := range payload {
		out = append(out, b^key[i%4])
	}
	return out
}

// readServerFrame reads one unmasked binary frame the server sent.
func readServerFrame(t *testing.T, r *bufio.Reader) []byte {
	t.Helper()
	var head [2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		t.Fatal(err)
	}
	if head[0] != 0x82 {
		t.Fatalf("frame header %#x, want a final binary frame", head[0])
	}
	n := int(head[1] & 0x7f)
	if n == 126 {
		var ext [2]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			t.Fatal(err)
		}
		n = int(ext[0])<<8 | int(ext[1])
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		t.Fatal(err)
	}
	return payload
}

package bench

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/coder/websocket"
)

// EchoHandler is the bare baseline server: a coder/websocket echo with no
// codec, no pipeline and no protocol, reading into a reused buffer the way
// voxhost's call loop does. voxhost's capacity is reported as a ratio of
// this server's on the same machine in the same run.
func EchoHandler(maxMessage int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		conn.SetReadLimit(int64(maxMessage))
		buf := make([]byte, maxMessage)
		ctx := context.Background()
		for {
			typ, rd, err := conn.Reader(ctx)
			if err != nil {
				return
			}
			n := 0
			for {
				m, err := rd.Read(buf[n:])
				n += m
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return
				}
			}
			if err := conn.Write(ctx, typ, buf[:n]); err != nil {
				return
			}
		}
	})
}

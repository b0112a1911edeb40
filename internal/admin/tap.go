package admin

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/voxhost/voxhost/host/server"
)

// TapContentType is GET /calls/{id}/tap's answer: a line of JSON
// (TapHeader), then one binary record per caller frame, little-endian:
//
//	u32 at_ms      where the frame starts on the caller's clock (t_ms of events)
//	u16 lost       frames dropped before it (the viewer fell a second behind)
//	u16 caller     samples of the caller's audio, as it came in (caller_rate)
//	u16 reference  samples of the far-end reference the inbound stages got (caller_rate; 0 without one)
//	u16 processed  samples of the inbound stages' output (processed_rate)
//
// then those samples, PCM16, in that order.
const TapContentType = "application/vnd.voxhost.tap"

// TapRecordHeader is the size of a record's header.
const TapRecordHeader = 12

// tapWriteTimeout is how long a viewer may leave a batch of frames unread
// before it is cut off: its place goes to another.
const tapWriteTimeout = 10 * time.Second

// TapHeader is the first line of GET /calls/{id}/tap.
type TapHeader struct {
	server.TapInfo
	// RecordHeader is TapRecordHeader, for a reader to check.
	RecordHeader int `json:"record_header"`
}

// handleTap serves GET /calls/{id}/tap on mux, for ids that begin prefix
// ("" serves every id): the live call's frames from now on, as they run,
// until the call or the viewer ends.
func (h *handler) handleTap(mux *http.ServeMux, prefix string) {
	mux.HandleFunc("GET /calls/{id}/tap", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if !strings.HasPrefix(id, prefix) {
			writeError(w, http.StatusNotFound, "the console API taps the console's own calls only, whose ids begin %s", prefix)
			return
		}
		tap, err := h.m.srv.Tap(id)
		switch {
		case errors.Is(err, server.ErrNoLiveCall):
			writeError(w, http.StatusNotFound, "%v", err)
			return
		case errors.Is(err, server.ErrTapLimit):
			writeError(w, http.StatusTooManyRequests, "%v; close another view of it first", err)
			return
		case err != nil:
			writeError(w, http.StatusInternalServerError, "%v", err)
			return
		}
		defer tap.Close()
		streamTap(r.Context(), w, tap)
	})
}

// streamTap writes tap's frames to w until the call ends, the viewer goes
// or a batch stays unread for tapWriteTimeout.
func streamTap(ctx context.Context, w http.ResponseWriter, tap *server.Tap) {
	rc := http.NewResponseController(w)
	// The listener's read timeout bounds a request's upload; a feed lasts
	// as long as the call.
	_ = rc.SetReadDeadline(time.Time{})
	w.Header().Set("Content-Type", TapContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	line, _ := json.Marshal(TapHeader{TapInfo: tap.Info(), RecordHeader: TapRecordHeader})
	buf := append(line, '\n')
	le := binary.LittleEndian
	record := func(f server.TapFrame) {
		var hdr [TapRecordHeader]byte
		le.PutUint32(hdr[:], uint32(f.AtMs))
		le.PutUint16(hdr[4:], uint16(min(f.Lost, math.MaxUint16)))
		le.PutUint16(hdr[6:], uint16(len(f.Caller)/2))
		le.PutUint16(hdr[8:], uint16(len(f.Reference)/2))
		le.PutUint16(hdr[10:], uint16(len(f.Processed)/2))
		buf = append(append(append(append(buf, hdr[:]...), f.Caller...), f.Reference...), f.Processed...)
	}
	for {
		_ = rc.SetWriteDeadline(time.Now().Add(tapWriteTimeout))
		if _, err := w.Write(buf); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		buf = buf[:0]
		if err := tap.Read(ctx, record); err != nil {
			return
		}
	}
}

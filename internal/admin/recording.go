package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/voxhost/voxhost/host/recording"
)

// RecordingInfo is GET /calls/{id}/recording's answer: the recordings of
// the calls named id (an id a caller chose may repeat), oldest first.
type RecordingInfo struct {
	// CallID is the id asked for.
	CallID string `json:"call_id"`
	// Recordings are the calls of that id that recorded.
	Recordings []RecordingSeen `json:"recordings"`
}

// RecordingSeen is one recorded call.
type RecordingSeen struct {
	// Started is when the call started.
	Started time.Time `json:"started"`
	// Files are its streams: caller, caller_processed, heard, reference.
	Files []RecordedFile `json:"files"`
}

// RecordedFile is one stream of a recording, with the URL that serves it
// (relative to the API's root).
type RecordedFile struct {
	recording.File
	// URL serves the file, relative to the API's root.
	URL string `json:"url"`
}

// handleRecordings serves, on mux:
//
//	GET /calls/{id}/recording         the recordings of the call (RecordingInfo)
//	GET /calls/{id}/recording/{file}  one of their files, audio/wav
//
// where only ids that begin prefix are served ("" serves every id).
func (h *handler) handleRecordings(mux *http.ServeMux, prefix string) {
	mux.HandleFunc("GET /calls/{id}/recording", func(w http.ResponseWriter, r *http.Request) {
		recs, ok := h.recordings(w, r.PathValue("id"), prefix)
		if !ok {
			return
		}
		id := r.PathValue("id")
		info := RecordingInfo{CallID: id, Recordings: []RecordingSeen{}}
		for _, rec := range recs {
			seen := RecordingSeen{Started: rec.Started}
			for _, f := range rec.Files {
				seen.Files = append(seen.Files, RecordedFile{File: f, URL: "calls/" + url.PathEscape(id) + "/recording/" + url.PathEscape(f.Name)})
			}
			info.Recordings = append(info.Recordings, seen)
		}
		writeJSON(w, http.StatusOK, info)
	})
	mux.HandleFunc("GET /calls/{id}/recording/{file}", func(w http.ResponseWriter, r *http.Request) {
		recs, ok := h.recordings(w, r.PathValue("id"), prefix)
		if !ok {
			return
		}
		// Only a name Find listed for this id is served: the request's
		// name is compared, never joined into a path.
		name := r.PathValue("file")
		for _, rec := range recs {
			for _, f := range rec.Files {
				if f.Name == name {
					serveRecording(w, r, f)
					return
				}
			}
		}
		writeError(w, http.StatusNotFound, "call %q has no recorded file %q; GET /calls/{id}/recording lists its files", r.PathValue("id"), name)
	})
}

// recordings finds the recordings of id, or answers why there are none.
func (h *handler) recordings(w http.ResponseWriter, id, prefix string) ([]recording.Recording, bool) {
	if !strings.HasPrefix(id, prefix) {
		writeError(w, http.StatusNotFound, "the console API shows the recordings of the console's own calls only, whose ids begin %s", prefix)
		return nil, false
	}
	dirs := h.m.srv.RecordingDirs()
	if len(dirs) == 0 {
		writeError(w, http.StatusNotFound, "no route records its calls (recording: under a route in the config)")
		return nil, false
	}
	recs, err := recording.Find(dirs, id)
	if err != nil {
		h.fail(w, err)
		return nil, false
	}
	if len(recs) == 0 {
		writeError(w, http.StatusNotFound, "no recording of call %q: its route records nothing, its recording could not start, or its files were removed", id)
		return nil, false
	}
	return recs, true
}

// serveRecording answers one file, with ranges (an audio element seeks).
func serveRecording(w http.ResponseWriter, r *http.Request, f recording.File) {
	fh, err := os.Open(f.Path)
	if err != nil {
		writeError(w, http.StatusNotFound, "recorded file %s: %v", f.Name, err)
		return
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "recorded file %s: %v", f.Name, err)
		return
	}
	w.Header().Set("Content-Type", "audio/wav")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", fmt.Sprintf("inline; filename=%q", f.Name))
	w.Header().Set("Cache-Control", "no-store")
	http.ServeContent(w, r, f.Name, info.ModTime(), fh)
}

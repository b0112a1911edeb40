package server

import (
	"slices"

	"github.com/voxhost/voxhost/host/recording"
)

// openRecording starts the call's recording when its route has one; a
// recording that cannot start is logged and counted, and the call goes on
// without it.
func (c *call) openRecording() {
	spec := c.route.Recording
	if spec == nil {
		return
	}
	c.s.recordingDirs.Store(spec.Dir, struct{}{})
	formats := recording.Formats{Caller: c.format, ProcessedRate: c.in.OutputRate()}
	rec, err := recording.Open(spec, c.id, c.started, formats, c.s.metrics.recording, c.log)
	if err != nil {
		c.log.Warn("recording failed to start; the call goes on without one", "err", err)
		return
	}
	c.rec = rec
	c.log.Debug("recording", "files", rec.Files())
}

// RecordingDirs are the directories call recordings are written in: every
// route's, and those of routes since replaced whose calls recorded, so
// that a reload does not hide what was recorded.
func (s *Server) RecordingDirs() []string {
	var dirs []string
	s.recordingDirs.Range(func(k, _ any) bool {
		dirs = append(dirs, k.(string))
		return true
	})
	for _, r := range s.routes.Load().byName {
		if r.Recording != nil && !slices.Contains(dirs, r.Recording.Dir) {
			dirs = append(dirs, r.Recording.Dir)
		}
	}
	slices.Sort(dirs)
	return dirs
}

package botsim

import (
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/internal/signal"
)

// defaultSpeech is what speak mode says without a recording: two seconds
// of the host's speech-like test signal, so that a VAD on the outbound
// path hears speech.
func defaultSpeech() Speech {
	return Speech{PCM: signal.Speech(24000, 2), Rate: 24000, Name: "speech"}
}

// speechIn returns the recording encoded in f, and the name of its mark.
// Each format is encoded once per simulator, on the first call that asks.
func (s *Sim) speechIn(f codec.Format) ([]byte, string) {
	sp := s.cfg.Speech
	if len(sp.PCM) == 0 {
		sp = defaultSpeech()
	}
	if sp.Name == "" {
		sp.Name = "speech"
	}
	if v, ok := s.speech.Load(f); ok {
		return v.([]byte), sp.Name
	}
	pcm := resample(sp.PCM, sp.Rate, f.Rate)
	enc := make([]byte, len(pcm)/2*f.SampleBytes())
	enc = enc[:f.Encode(enc, pcm)]
	v, _ := s.speech.LoadOrStore(f, enc)
	return v.([]byte), sp.Name
}

// resample converts mono PCM16LE from one rate to another by linear
// interpolation. That is poor audio but good test audio: a bot simulator
// needs the right number of samples at the right rate, and voxhost's own
// resampler is a plugin, not a Go function to call here.
func resample(pcm []byte, from, to int) []byte {
	n := len(pcm) / 2
	if from == to || n == 0 {
		return pcm[:2*n]
	}
	sample := func(i int) float64 { return float64(int16(uint16(pcm[2*i]) | uint16(pcm[2*i+1])<<8)) }
	m := int(int64(n) * int64(to) / int64(from))
	out := make([]byte, 2*m)
	for j := range m {
		x := float64(j) * float64(from) / float64(to)
		i := int(x)
		v := sample(min(i, n-1))
		if i+1 < n {
			v += (sample(i+1) - v) * (x - float64(i))
		}
		s := int16(v)
		out[2*j], out[2*j+1] = byte(s), byte(uint16(s)>>8)
	}
	return out
}

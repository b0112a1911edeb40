//go:build ignore

// gen renders the aec test fixtures: the bot's voice (bot_8k.wav, espeak-ng's
// en-us voice, a few sentences back to back: what the caller is sent) and
// the caller's (caller_8k.wav, en-gb with a female variant, at another pitch:
// the near end), each converted by sox to 8 kHz mono PCM16 in the telephone
// band (200-3400 Hz: espeak-ng's output has energy below 20 Hz that an echo
// canceller's DC filter rightly removes, which would count as distortion). The tests make
// the echo themselves from bot_8k.wav; they need neither tool. Run it only to
// re-render the fixtures:
//
//	apt-get install -y espeak-ng sox
//	cd plugins/aec/testdata && go run gen.go
package main

import (
	"log"
	"os"
	"os/exec"
)

func render(out, voice, pitch, text string) {
	tmp := out + ".22k.wav"
	defer os.Remove(tmp)
	for _, args := range [][]string{
		{"espeak-ng", "-v", voice, "-p", pitch, "-s", "160", "-w", tmp, text},
		{"sox", tmp, "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer", out, "sinc", "200-3400", "norm", "-3"},
	} {
		if b, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			log.Fatalf("%v: %v\n%s", args, err, b)
		}
	}
}

func main() {
	render("bot_8k.wav", "en-us", "40",
		"Thanks for calling. I can help you with your booking today. "+
			"Could you tell me the reference number on your confirmation email? "+
			"It starts with two letters followed by six digits. "+
			"Take your time, I will wait while you find it. "+
			"If you do not have it, I can look the booking up by your surname and the date of travel.")
	render("caller_8k.wav", "en-gb+f3", "70",
		"Hello, yes. Sorry, I have got it here somewhere. Just a moment please.")
}

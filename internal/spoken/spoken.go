// Package spoken renders synthetic speech for the detectors' benchmarks:
// sentences in several languages, each spoken by espeak-ng in several voice
// variants and speeds, converted by sox to mono PCM16 at the rate asked
// for. It needs both tools (apt: espeak-ng sox) and returns an error naming
// the missing one; tests that must run everywhere use the committed
// fixtures instead.
package spoken

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Utterance is one rendered sentence.
type Utterance struct {
	Voice string // espeak-ng voice and variant, e.g. "de+m3"
	Speed int    // words a minute
	Text  string
	PCM   []byte // mono PCM16 little-endian
}

// Texts are the sentences per espeak-ng language, a few of each so that
// every language's phonology is heard: call-centre phrases, numbers and
// ordinary prose.
var Texts = map[string][]string{
	"en": {
		"Welcome to voice host, how may I help you today?",
		"I would like to check the status of my order, please.",
		"The number is four one five, five five five, two six eight nine.",
		"Could you repeat that more slowly? The line is very noisy.",
		"Yesterday evening the weather turned cold and it started to rain.",
		"Please hold while I transfer you to the billing department.",
		"My account was charged twice for the same subscription last month.",
		"Thank you very much, that answers all of my questions. Goodbye.",
	},
	"de": {
		"Guten Tag, ich möchte gerne meine Bestellung ändern.",
		"Meine Kundennummer ist drei sieben neun, vier zwei acht.",
		"Können Sie das bitte noch einmal langsam wiederholen?",
		"Gestern Abend wurde es kalt und es begann zu regnen.",
		"Bitte bleiben Sie am Apparat, ich verbinde Sie weiter.",
		"Vielen Dank für Ihre Hilfe, auf Wiederhören.",
	},
	"fr": {
		"Bonjour, je voudrais connaître l'état de ma commande.",
		"Mon numéro de client est le quatre cent vingt-trois, soixante-dix-huit.",
		"Pourriez-vous répéter plus lentement, s'il vous plaît?",
		"Hier soir, le temps s'est refroidi et il a commencé à pleuvoir.",
		"Veuillez patienter, je vous transfère au service de facturation.",
		"Merci beaucoup pour votre aide, au revoir.",
	},
	"es": {
		"Buenos días, quisiera saber dónde está mi pedido.",
		"Mi número de cliente es el seis ocho dos, nueve cuatro uno.",
		"¿Podría repetirlo más despacio, por favor?",
		"Anoche hizo frío y empezó a llover sobre la ciudad.",
		"Espere un momento, le paso con el departamento de facturación.",
		"Muchas gracias por su ayuda, hasta luego.",
	},
	"it": {
		"Buongiorno, vorrei sapere a che punto è il mio ordine.",
		"Il mio numero cliente è cinque tre sette, otto due zero.",
		"Potrebbe ripetere più lentamente, per favore?",
		"Ieri sera ha fatto freddo e ha cominciato a piovere.",
		"Resti in linea, la trasferisco all'ufficio fatture.",
		"Grazie mille per l'aiuto, arrivederci.",
	},
	"nl": {
		"Goedemiddag, ik wil graag de status van mijn bestelling weten.",
		"Mijn klantnummer is zeven vier een, drie negen twee.",
		"Kunt u dat alstublieft langzamer herhalen?",
		"Gisteravond werd het koud en begon het te regenen.",
		"Een ogenblik, ik verbind u door met de administratie.",
		"Hartelijk dank voor uw hulp, tot ziens.",
	},
	"pt": {
		"Bom dia, gostaria de saber onde está a minha encomenda.",
		"O meu número de cliente é dois nove cinco, um sete três.",
		"Pode repetir mais devagar, por favor?",
		"Ontem à noite ficou frio e começou a chover.",
		"Aguarde um momento, vou transferir a sua chamada.",
		"Muito obrigado pela ajuda, até logo.",
	},
	"pl": {
		"Dzień dobry, chciałbym sprawdzić status mojego zamówienia.",
		"Mój numer klienta to osiem jeden sześć, dwa pięć cztery.",
		"Czy może pan powtórzyć to wolniej?",
		"Wczoraj wieczorem zrobiło się zimno i zaczęło padać.",
		"Proszę czekać, łączę z działem rozliczeń.",
		"Dziękuję bardzo za pomoc, do widzenia.",
	},
}

// Variants are espeak-ng's voice variants used: five male, four female.
var Variants = []string{"m1", "m3", "m5", "m7", "f1", "f2", "f3", "f4", "klatt"}

// Speeds are the speaking rates used, words a minute.
var Speeds = []int{130, 175}

// Job names one utterance to render.
type Job struct {
	Voice string
	Speed int
	Text  string
}

// All is every sentence of Texts in every variant and speed: the longest
// material this package makes (languages sorted, so the order is fixed).
func All() []Job {
	var jobs []Job
	for _, lang := range []string{"de", "en", "es", "fr", "it", "nl", "pl", "pt"} {
		for _, v := range Variants {
			for _, sp := range Speeds {
				for _, text := range Texts[lang] {
					jobs = append(jobs, Job{Voice: lang + "+" + v, Speed: sp, Text: text})
				}
			}
		}
	}
	return jobs
}

// Render speaks each job at rate Hz, two at a time, in the jobs' order.
func Render(rate int, jobs []Job) ([]Utterance, error) {
	for _, tool := range []string{"espeak-ng", "sox"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("spoken: %s is needed (apt-get install espeak-ng sox): %w", tool, err)
		}
	}
	dir, err := os.MkdirTemp("", "spoken")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := make([]Utterance, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				pcm, err := render(dir, i, rate, jobs[i])
				out[i], errs[i] = Utterance{Voice: jobs[i].Voice, Speed: jobs[i].Speed, Text: jobs[i].Text, PCM: pcm}, err
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, errors.Join(errs...)
}

func render(dir string, i, rate int, j Job) ([]byte, error) {
	wav := filepath.Join(dir, fmt.Sprintf("u%d.wav", i))
	if out, err := exec.Command("espeak-ng", "-v", j.Voice, "-s", fmt.Sprint(j.Speed), "-w", wav, j.Text).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("spoken: espeak-ng -v %s: %v: %s", j.Voice, err, out)
	}
	// -D: no dither, so espeak's silences stay digital silence; -4 dB of
	// headroom keeps the resampler from clipping.
	var pcm, stderr bytes.Buffer
	cmd := exec.Command("sox", wav, "-D", "-r", fmt.Sprint(rate), "-c", "1", "-b", "16", "-e", "signed-integer", "-L", "-t", "raw", "-", "gain", "-4")
	cmd.Stdout, cmd.Stderr = &pcm, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("spoken: sox: %v: %s", err, stderr.Bytes())
	}
	return pcm.Bytes(), nil
}

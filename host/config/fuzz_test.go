package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/config"
)

func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("../../examples/voxhost.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(example))
	f.Add("limits:\n  idle_timeout: ten\n")
	f.Add("pipelines:\n  main: &m [{plugin: gain, config: {a: [1, *m]}}]\n  b: *m\n")
	f.Add("auth: {tokens: &x [*x]}\n")
	f.Add("\tlisten: x\n")
	f.Add(relay + "      protocol: twilio\n      headers: {A: \"${HOME}\", B: \"${\"}\n      options: {a: b}\n")
	located := regexp.MustCompile(`^voxhost\.yaml:\d+:\d+: \S`)
	f.Fuzz(func(t *testing.T, data string) {
		_, err := config.Parse("voxhost.yaml", []byte(data))
		if err == nil {
			return
		}
		if msg := err.Error(); !located.MatchString(msg) || strings.Contains(msg, "\n") {
			t.Errorf("error is not one located line: %q", msg)
		}
	})
}

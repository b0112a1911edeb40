package transport

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// option is one setting a dialect takes in a route's upstream.options.
type option[T any] struct {
	name string
	// values lists what an option that is a choice may be; "" keeps the
	// default and set is not called. nil takes any string, "" too.
	values []string
	set    func(o *T, v string)
	// refuse, when not empty, is why the key is not an option, after the
	// dialect's name ("takes the model in the upstream url, ..."); such a
	// key is not listed among the options.
	refuse string
}

// optionTable reads a dialect's options into a T: every dialect that
// takes options reads them alike, refusing an unknown key with the list
// of the ones it takes and a bad choice with its values.
type optionTable[T any] struct {
	dialect string
	options []option[T]
	// prefix, when not empty, takes every key that begins with it as
	// prefix+NAME (ElevenLabs' dynamic.NAME), through setPrefixed.
	prefix      string
	setPrefixed func(o *T, name, v string) error
}

// read applies opts to o in key order, so that of several bad options the
// error names the same one every time.
func (t *optionTable[T]) read(opts map[string]string, o *T) error {
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		v := opts[k]
		if name, ok := strings.CutPrefix(k, t.prefix); ok && t.prefix != "" {
			if err := t.setPrefixed(o, name, v); err != nil {
				return err
			}
			continue
		}
		i := slices.IndexFunc(t.options, func(op option[T]) bool { return op.name == k })
		if i < 0 {
			return fmt.Errorf("the %s dialect has no option %s (it takes %s)", t.dialect, excerpt(k), t.names())
		}
		switch op := &t.options[i]; {
		case op.refuse != "":
			return fmt.Errorf("the %s dialect %s", t.dialect, op.refuse)
		case op.values == nil:
			op.set(o, v)
		case v == "":
		case slices.Contains(op.values, v):
			op.set(o, v)
		default:
			return fmt.Errorf("the %s dialect's %s is %s, not %s", t.dialect, k, listWords(op.values, "or"), excerpt(v))
		}
	}
	return nil
}

// names lists the options, sorted, as an unknown key's error does.
func (t *optionTable[T]) names() string {
	var names []string
	for _, op := range t.options {
		if op.refuse == "" {
			names = append(names, op.name)
		}
	}
	if t.prefix != "" {
		names = append(names, t.prefix+"NAME")
	}
	slices.Sort(names)
	return listWords(names, "and")
}

// listWords joins words as a sentence lists them: "a, b and c".
func listWords(words []string, conjunction string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conjunction + " " + words[len(words)-1]
}

// trueOrFalse are the values of a yes-or-no option.
var trueOrFalse = []string{"true", "false"}

// Package scaffold makes the project of a new plugin, `voxhost plugin new`:
// a directory, anywhere, with the plugin's source, a Makefile and a copy of
// the SDK of its language, which builds with one `make`, passes `voxhost
// plugin test` and plays through `voxhost run`, with no voxhost checkout.
//
// A project is put together from package sdk's embedded files: the
// language's template directories (sdk/<lang>/template/) and the shared
// template/ at the project's root, the SDK's own files and voxhost.mk under
// voxhost/. Template files are copied with these changes, SDK files as they
// are:
//
//   - in paths and contents, __NAME__ becomes the plugin's name (my-gain),
//     __IDENT__ the name as an identifier (my_gain), __TYPE__ as a type name
//     (MyGain), and __LANG__, __LANGID__, __SOURCE__ and __TOOLCHAIN__ the
//     language's title, --lang value, main source file and toolchain;
//   - a trailing .tmpl is dropped (it keeps Go and Cargo from reading a
//     template as code of the voxhost repository), and gitignore becomes
//     .gitignore.
package scaffold

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/voxhost/voxhost/sdk"
)

// Language is one language `plugin new` writes projects in.
type Language struct {
	// ID is the value of --lang: c, cpp, rust, assemblyscript, go, wat.
	ID string
	// Title names it in prose: "C++".
	Title string
	// Source is the plugin's main source file in the project, with
	// placeholders: "__NAME__.c".
	Source string
	// Toolchain is what `make` needs, in a few words.
	Toolchain string
	// Tools are the commands the build runs, for a caller that checks they
	// are installed (the first word of each is looked up on PATH).
	Tools []string
	// templates are directories of sdk.Files copied into the project's root.
	templates []string
	// files are the SDK's files and directories in sdk.Files (patterns of
	// fs.Glob), copied into voxhost/ at their path below sdkDir; the
	// shared voxhost.mk goes there too. Tests (_test.go) are left out.
	sdkDir string
	files  []string
	// extra are more template files, by their path in sdk.Files, and the
	// path each takes in the project (WAT's template is the SDK's template.wat).
	extra map[string]string
}

// SDKDir is the directory of the project the SDK is copied into.
const SDKDir = "voxhost"

var languages = []Language{
	{
		ID: "c", Title: "C", Source: "__NAME__.c", Toolchain: "clang-14 and wasm-ld, no libc",
		Tools: []string{"make", "clang-14", "wasm-ld-14"}, templates: []string{"c/template"},
		sdkDir: "c", files: []string{"c/voxhost.h", "c/README.md"},
	},
	{
		ID: "cpp", Title: "C++", Source: "__NAME__.cpp", Toolchain: "clang++-14 and wasm-ld, freestanding C++17",
		Tools: []string{"make", "clang++-14", "wasm-ld-14"}, templates: []string{"c/template-cpp"},
		sdkDir: "c", files: []string{"c/voxhost.h", "c/README.md"},
	},
	{
		ID: "rust", Title: "Rust", Source: "src/lib.rs", Toolchain: "cargo and rustc for wasm32-unknown-unknown, offline",
		Tools: []string{"make", "/usr/bin/cargo", "/usr/bin/rustc"}, templates: []string{"rust/template"},
		sdkDir: "rust", files: []string{"rust/Cargo.toml", "rust/README.md", "rust/src"},
	},
	{
		ID: "assemblyscript", Title: "AssemblyScript", Source: "assembly/index.ts",
		Toolchain: "node and npm; npm install brings asc 0.28.20 the first time",
		Tools:     []string{"make", "node", "npm"}, templates: []string{"assemblyscript/template"},
		sdkDir: "assemblyscript", files: []string{"assemblyscript/index.ts", "assemblyscript/assembly",
			"assemblyscript/package.json", "assemblyscript/asconfig.plugin.json", "assemblyscript/plugin.mk",
			"assemblyscript/README.md"},
	},
	{
		ID: "go", Title: "Go", Source: "main.go", Toolchain: "Go 1.24 or later, GOOS=wasip1",
		Tools: []string{"make", "go"}, templates: []string{"go/template"},
		sdkDir: "go", files: []string{"go/*.go", "go/reference/*.go", "go/README.md"},
	},
	{
		ID: "wat", Title: "WebAssembly text", Source: "__NAME__.wat", Toolchain: "wat2wasm (wabt) and sed",
		Tools: []string{"make", "wat2wasm", "sed"}, templates: []string{"wat/template"},
		sdkDir: "wat", files: []string{"wat/voxhost.wat", "wat/wat.mk", "wat/README.md"},
		extra: map[string]string{"wat/template.wat": "__NAME__.wat"},
	},
}

// Languages lists the languages, in the order `plugin new --help` names them.
func Languages() []Language { return append([]Language(nil), languages...) }

// Lookup finds a language by its --lang value.
func Lookup(id string) (Language, bool) {
	for _, l := range languages {
		if l.ID == id {
			return l, true
		}
	}
	return Language{}, false
}

// IDs are the --lang values, e.g. for a usage line.
func IDs() []string {
	ids := make([]string, len(languages))
	for i, l := range languages {
		ids[i] = l.ID
	}
	return ids
}

var validName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`)

// CheckName says why name cannot name a plugin, or nil. A name is what the
// module, the project and the plugin's events are called after (events are
// named NAME.something, and event names are 1-64 bytes of [a-z0-9_.-]).
func CheckName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("plugin name %q: use 1 to 40 lower-case letters, digits, '-' and '_', starting with a letter (it names the .wasm and the plugin's events)", name)
	}
	return nil
}

// Project is what New wrote.
type Project struct {
	// Dir is the project's directory, Language its language.
	Dir      string
	Language Language
	// Name is the plugin's name, WASM the module `make` builds (relative
	// to Dir), Source its main source file.
	Name, WASM, Source string
	// Files are the files written, relative to Dir, sorted.
	Files []string
}

// Options are the choices of a new project beyond its language and name.
type Options struct {
	// FarEnd makes the plugin ask for the far-end reference (ABI §11), for
	// an echo canceller: the source is written with the SDK's way of asking
	// for it (C and C++: VOX_WANTS_REFERENCE; Rust: plugin!'s far_end; Go:
	// the reference package; AssemblyScript: vox_reference re-exported).
	FarEnd bool
}

// farEndEdits are the changes FarEnd makes to each language's main source:
// one text replaced, which must occur in the template exactly once.
var farEndEdits = map[string][2]string{
	"c":   {"#define VOXHOST_IMPLEMENTATION\n", "#define VOX_WANTS_REFERENCE /* the far-end reference: vox_reference() beside vox_samples() */\n#define VOXHOST_IMPLEMENTATION\n"},
	"cpp": {"#define VOXHOST_IMPLEMENTATION\n", "#define VOX_WANTS_REFERENCE // the far-end reference: vox_reference() beside vox_samples()\n#define VOXHOST_IMPLEMENTATION\n"},
	"rust": {"voxhost::plugin!(__TYPE__, __TYPE__ { gain_q16: 65536, samples_seen: 0 });",
		"// far_end: the far-end reference, far_end(samples.len()) in process.\nvoxhost::plugin!(__TYPE__, __TYPE__ { gain_q16: 65536, samples_seen: 0 }, far_end);"},
	"go": {"\tvoxhost \"github.com/voxhost/voxhost/sdk/go\"\n",
		"\tvoxhost \"github.com/voxhost/voxhost/sdk/go\"\n\t// The far-end reference: import it by name and read\n\t// reference.Frame(len(s)) in Process.\n\t_ \"github.com/voxhost/voxhost/sdk/go/reference\"\n"},
	"assemblyscript": {`export { voxhost_abi_v1, vox_buffer } from "@voxhost/sdk";`,
		"// vox_reference: the far-end reference, reference()[i] beside samples()[i].\n" + `export { voxhost_abi_v1, vox_buffer, vox_reference } from "@voxhost/sdk";`},
}

// New writes the project of the plugin name in language lang into dir,
// which must not exist or be empty.
func New(lang, name, dir string, opts Options) (*Project, error) {
	l, ok := Lookup(lang)
	if !ok {
		return nil, fmt.Errorf("unknown language %q: want one of %s", lang, strings.Join(IDs(), ", "))
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s exists and is not empty: plugin new writes a new project", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	files, err := l.render(name)
	if err != nil {
		return nil, err
	}
	p := &Project{Dir: dir, Language: l, Name: name, WASM: "build/" + name + ".wasm", Source: l.replacer(name).Replace(l.Source)}
	if opts.FarEnd {
		edit, ok := farEndEdits[l.ID]
		if !ok {
			return nil, fmt.Errorf("--far-end is not written for %s: export vox_reference yourself (sdk/%s/README.md)", l.Title, l.sdkDir)
		}
		r := l.replacer(name)
		old, src := r.Replace(edit[0]), string(files[p.Source])
		if strings.Count(src, old) != 1 {
			return nil, fmt.Errorf("scaffold: the %s template has changed: cannot add the far-end reference to %s", l.Title, p.Source)
		}
		files[p.Source] = []byte(strings.Replace(src, old, r.Replace(edit[1]), 1))
	}
	for _, rel := range sortedKeys(files) {
		full := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(full, files[rel], 0o644); err != nil {
			return nil, err
		}
		p.Files = append(p.Files, rel)
	}
	return p, nil
}

// replacer substitutes the placeholders of template files.
func (l Language) replacer(name string) *strings.Replacer {
	ident := strings.ReplaceAll(name, "-", "_")
	var typ strings.Builder
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' }) {
		typ.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	source := strings.NewReplacer("__NAME__", name).Replace(l.Source)
	return strings.NewReplacer("__NAME__", name, "__IDENT__", ident, "__TYPE__", typ.String(),
		"__LANGID__", l.ID, "__LANG__", l.Title, "__SOURCE__", source, "__TOOLCHAIN__", l.Toolchain)
}

// render is the project's files by path (slash-separated, relative to its root).
func (l Language) render(name string) (map[string][]byte, error) {
	r := l.replacer(name)
	files := map[string][]byte{}
	put := func(rel string, data []byte) error {
		if _, dup := files[rel]; dup {
			return fmt.Errorf("scaffold: two files for %s", rel)
		}
		files[rel] = data
		return nil
	}
	for _, dir := range append([]string{"template"}, l.templates...) {
		err := fs.WalkDir(sdk.Files, dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := sdk.Files.ReadFile(p)
			if err != nil {
				return err
			}
			rel := r.Replace(strings.TrimSuffix(strings.TrimPrefix(p, dir+"/"), ".tmpl"))
			if path.Base(rel) == "gitignore" {
				rel = path.Join(path.Dir(rel), ".gitignore")
			}
			return put(rel, []byte(r.Replace(string(data))))
		})
		if err != nil {
			return nil, err
		}
	}
	for from, to := range l.extra {
		data, err := sdk.Files.ReadFile(from)
		if err != nil {
			return nil, err
		}
		if err := put(r.Replace(to), []byte(r.Replace(string(data)))); err != nil {
			return nil, err
		}
	}
	for _, pattern := range append([]string{"voxhost.mk"}, l.files...) {
		roots, err := fs.Glob(sdk.Files, pattern)
		if err != nil || len(roots) == 0 {
			return nil, fmt.Errorf("scaffold: no SDK file %s", pattern)
		}
		for _, root := range roots {
			err := fs.WalkDir(sdk.Files, root, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.go") {
					return err
				}
				data, err := sdk.Files.ReadFile(p)
				if err != nil {
					return err
				}
				return put(path.Join(SDKDir, strings.TrimPrefix(p, l.sdkDir+"/")), data)
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package families

import (
	"os"
	"strings"
	"testing"
)

// FuzzParseConfig: any bytes give a checked configuration or an error that
// names the file, never a panic; and whatever is accepted is usable as is:
// every family has its commands, known answer semantics, and argv
// templates that expand without error once every placeholder has a value.
// Seeds: testdata/fuzz/FuzzParseConfig (committed) and the shipped file.
func FuzzParseConfig(f *testing.F) {
	shipped, err := os.ReadFile("families.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(shipped)
	trtmc, err := os.ReadFile("trtmc.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(trtmc)
	vars := map[string]string{}
	for _, p := range Placeholders {
		vars[p] = "v-" + p
	}
	reg := DefaultRegistry()
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if cfg.Schema != Schema {
			t.Fatalf("accepted schema %q", cfg.Schema)
		}
		for _, name := range cfg.Names() {
			fam := cfg.Families[name]
			if fam == nil {
				t.Fatalf("family %q accepted as null", name)
			}
			if len(fam.Server) == 0 || fam.Readiness == "" || len(fam.Native) == 0 || !strings.HasPrefix(fam.Route, "/") {
				t.Fatalf("family %q accepted without its commands: %+v", name, fam)
			}
			if _, ok := reg.Extractors[fam.Extractor]; !ok {
				t.Fatalf("family %q accepted with extractor %q", name, fam.Extractor)
			}
			if _, ok := reg.Comparators[fam.Comparator]; !ok {
				t.Fatalf("family %q accepted with comparator %q", name, fam.Comparator)
			}
			for _, argv := range [][]string{fam.Server, fam.Correctness, fam.Native, fam.Prepare.Bundle, fam.Prepare.Corpus} {
				if ps := CheckArgv(argv); len(ps) > 0 {
					t.Fatalf("family %q: accepted argv %q that CheckArgv rejects: %+v", name, argv, ps)
				}
				out, err := Expand(argv, vars)
				if err != nil {
					t.Fatalf("family %q: accepted argv does not expand: %v", name, err)
				}
				if len(out) != len(argv) {
					t.Fatalf("family %q: expansion changed the number of arguments: %q -> %q", name, argv, out)
				}
			}
		}
	})
}

// Found by FuzzParseConfig (testdata/fuzz/FuzzParseConfig/null-family): a
// family key with nothing under it crashed the parser.
func TestParseRejectsEmptyFamily(t *testing.T) {
	_, err := Parse("fam.yaml", []byte("schema: trtmc-qual/families/v1\nfamilies:\n  ref-vlm:\n"))
	if err == nil || !strings.Contains(err.Error(), "fam.yaml:3: families.ref-vlm: empty family definition") {
		t.Fatalf("got %v", err)
	}
}

// FuzzCheckArgv: the families argv validation. Whatever it accepts can
// run as is: argv[0] names a program (not empty, no whitespace), no
// element carries a NUL, every placeholder is a known lower-case one, and
// expansion keeps one argument per element and leaves no placeholder (nor
// a known one in another case; {PATH} is literal text).
// Whatever it rejects is named by element, in printable ASCII.
func FuzzCheckArgv(f *testing.F) {
	for _, seed := range []string{
		"{bin}/trtmc-refserver\x1fserve\x1f{bundle}", "{BIN}/x", "", "\x1f", "sh -c 'x {bundle}'",
		"x\x1f{nope}\x1f{\"a\":1}", "a\x00b", "{Bundle}\x1f{model}{port}", " x", "x\x1f\x1f",
	} {
		f.Add(seed)
	}
	vars := map[string]string{}
	for _, p := range Placeholders {
		vars[p] = "v-" + p
	}
	f.Fuzz(func(t *testing.T, data string) {
		argv := strings.Split(data, "\x1f")
		ps := CheckArgv(argv)
		if len(ps) > 0 {
			for _, p := range ps {
				if p.Index < 0 || p.Index >= len(argv) || p.Message == "" {
					t.Fatalf("problem %+v does not name an element of %q", p, argv)
				}
				for _, c := range []byte(p.Message) {
					if c < 0x20 || c >= 0x7f {
						t.Fatalf("message carries byte %#x raw: %q", c, p.Message)
					}
				}
			}
			return
		}
		if argv[0] == "" || strings.ContainsAny(argv[0], " \t\n\r\v\f") {
			t.Fatalf("accepted argv[0] %q", argv[0])
		}
		out, err := Expand(argv, vars)
		if err != nil {
			t.Fatalf("accepted %q does not expand: %v", argv, err)
		}
		if len(out) != len(argv) {
			t.Fatalf("expansion changed the number of arguments: %q -> %q", argv, out)
		}
		for i, a := range out {
			if strings.ContainsRune(a, 0) {
				t.Fatalf("argument %d carries a NUL: %q", i, a)
			}
			for _, m := range placeholderLike.FindAllStringSubmatch(a, -1) {
				if placeholderRE.MatchString(m[0]) || known(strings.ToLower(m[1])) {
					t.Fatalf("placeholder %s left in argument %d: %q -> %q", m[0], i, argv[i], a)
				}
			}
		}
	})
}

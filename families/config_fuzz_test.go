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

package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Public formats are read by others: md, html, JUnit, the docs block and
// the completion summary are rendered from Public(), the others (csv,
// json, table, tsv) from the exact evidence.

// Scrubber builds the report's scrubber from what the evidence records
// and what the caller knows (r.Publish): the roots declared by the caller
// first, then each row's recorded roots (provenance.roots), the result
// roots the report was loaded from (each is $OUT), and what each row's
// command and provenance show (its --out, the directory of its --config,
// the virtual environment of its --aiperf; the directory of its bundle and
// its tokenizer when no other root holds them); the host names and the
// top-level directories and the users of every row's host and of the
// caller.
func (g *GroupReport) Scrubber() *Scrubber {
	if g.scrub != nil {
		return g.scrub
	}
	roots := slices.Clone(g.Publish.Roots)
	for _, root := range g.loadRoots {
		roots = append(roots, verdict.Root{Name: RootOut, Path: root})
	}
	hosts := slices.Clone(g.Publish.Identity.Hosts)
	topDirs, users := slices.Clone(g.Publish.Identity.TopDirs), slices.Clone(g.Publish.Identity.Users)
	var derived []verdict.Root
	for i := range g.Rows {
		res := g.Rows[i].Result
		if res == nil {
			continue
		}
		roots = append(roots, res.Provenance.Roots...)
		topDirs, users = append(topDirs, res.Provenance.HostTopDirs...), append(users, res.Provenance.HostUsers...)
		p, d := InferRoots(res)
		roots, derived = append(roots, p...), append(derived, d...)
		if res.Provenance.Host != "" {
			hosts = append(hosts, res.Provenance.Host)
		}
	}
	for _, d := range derived {
		if !underAny(d.Path, roots) {
			roots = append(roots, d)
		}
	}
	g.scrub = NewScrubber(roots, Identity{Hosts: hosts, Users: users, TopDirs: topDirs})
	return g.scrub
}

func underAny(path string, roots []verdict.Root) bool {
	for _, r := range roots {
		if CheckRoot(r) == nil && (path == r.Path || strings.HasPrefix(path, filepath.Clean(r.Path)+"/")) {
			return true
		}
	}
	return false
}

// InferRoots are the roots a row's own facts show: primary ones ($OUT from
// the command's --out, $HARNESS from the directory of its --config,
// $AIPERF_VENV from an --aiperf of VENV/bin/aiperf) and derived ones
// ($BUNDLE_DIR, the served bundle's directory; $TOKENIZER, the tokenizer
// directory), which count only where no other root holds them.
func InferRoots(res *verdict.Result) (primary, derived []verdict.Root) {
	words, _ := splitCommand(res.Command)
	if v := flagValue(words, "--out"); filepath.IsAbs(v) {
		primary = append(primary, verdict.Root{Name: RootOut, Path: filepath.Clean(v)})
	}
	if v := flagValue(words, "--config"); filepath.IsAbs(v) {
		primary = append(primary, verdict.Root{Name: RootHarness, Path: filepath.Dir(filepath.Clean(v))})
	}
	aiperf := flagValue(words, "--aiperf")
	if aiperf == "" {
		for _, c := range res.Provenance.Commands {
			if c.Stage == "aiperf" && len(c.Argv) > 0 {
				aiperf = c.Argv[0]
			}
		}
	}
	if v := AIPerfVenv(aiperf); v != "" {
		primary = append(primary, verdict.Root{Name: RootAIPerfVenv, Path: v})
	}
	if b := res.Provenance.BundlePath; filepath.IsAbs(b) {
		derived = append(derived, verdict.Root{Name: RootBundles, Path: filepath.Dir(filepath.Clean(b))})
	}
	if t := res.Provenance.Tokenizer; t != nil && filepath.IsAbs(t.Path) {
		derived = append(derived, verdict.Root{Name: RootTokenizer, Path: filepath.Clean(t.Path)})
	}
	if pkg := trtmcPackage(res.Provenance.Native); pkg != "" {
		derived = append(derived, verdict.Root{Name: RootTRTMCPackage, Path: pkg})
	}
	return primary, derived
}

// trtmcPackage is the tensorrt_model_connect package directory of a native
// worker found beside it (PKG/bin/trtmc-server), or "".
func trtmcPackage(n *verdict.NativeRun) string {
	if n == nil || n.WorkerBinarySource != "package" || !filepath.IsAbs(n.WorkerBinary) {
		return ""
	}
	bin := filepath.Dir(filepath.Clean(n.WorkerBinary))
	if filepath.Base(bin) != "bin" || filepath.Base(filepath.Dir(bin)) != "tensorrt_model_connect" {
		return ""
	}
	return filepath.Dir(bin)
}

// AIPerfVenv is VENV of an absolute VENV/bin/aiperf, or "".
func AIPerfVenv(aiperf string) string {
	if !filepath.IsAbs(aiperf) {
		return ""
	}
	bin := filepath.Dir(filepath.Clean(aiperf))
	if filepath.Base(bin) != "bin" {
		return ""
	}
	v := filepath.Dir(bin)
	if v == "/" {
		return ""
	}
	return v
}

func splitCommand(line string) ([]string, bool) {
	if line == "" {
		return nil, false
	}
	return text.ShellSplit(line)
}

// flagValue is the value of --flag V or --flag=V among words ("" if none).
func flagValue(words []string, flag string) string {
	for i, w := range words {
		if w == flag && i+1 < len(words) {
			return words[i+1]
		}
		if v, ok := strings.CutPrefix(w, flag+"="); ok {
			return v
		}
	}
	return ""
}

// Public is the report as it may be published: every string of every row
// mapped by the report's Scrubber (commands word by word), the rest as it
// is, but the run host's listing of / (provenance.host_top_dirs), which is
// never published. Rendering Public() of a report built from a published evidence pack
// gives the same text as rendering Public() of the original.
func (g *GroupReport) Public() (*GroupReport, error) {
	if g.public {
		return g, nil
	}
	s := g.Scrubber()
	out, err := mapStrings(g, s)
	if err != nil {
		// Every field of a report survives a JSON round trip (there is a
		// test); should one not, publish nothing rather than the original.
		return nil, fmt.Errorf("public copy of the report: %w", err)
	}
	out.LinkDir, out.Publish, out.Summary, out.loadRoots, out.scrub, out.public = g.LinkDir, g.Publish, g.Summary, g.loadRoots, s, true
	for i := range out.Rows {
		src := &g.Rows[i]
		row := &out.Rows[i]
		row.dir, row.files, row.joinedNote = src.dir, src.files, s.Text(src.joinedNote)
		if row.Result != nil {
			// The run host's listing of / fed the scrubber; published it
			// would fingerprint the host.
			row.Result.Provenance.HostTopDirs = nil
		}
		if src.joined != nil {
			row.joined = make([]verdict.JoinedLine, len(src.joined))
			for j, l := range src.joined {
				l.Diff, l.Problem = s.Text(l.Diff), s.Text(l.Problem)
				row.joined[j] = l
			}
		}
	}
	return out, nil
}

// mapStrings copies v through JSON with every string mapped by s; a
// string under the key "command" is a shell line (Scrubber.Command).
func mapStrings[T any](v *T, s *Scrubber) (*T, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	mapped, err := json.Marshal(MapJSONStrings(generic, s))
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := json.Unmarshal(mapped, out); err != nil {
		return nil, err
	}
	return out, nil
}

// MapJSONStrings maps every string (and object key) of a decoded JSON
// value by s.Text, and a string under a "command" key by s.Command.
func MapJSONStrings(v any, s *Scrubber) any {
	return mapValue(v, "", s)
}

func mapValue(v any, key string, s *Scrubber) any {
	switch x := v.(type) {
	case string:
		if key == "command" {
			return s.Command(x)
		}
		return s.Text(x)
	case []any:
		for i := range x {
			x[i] = mapValue(x[i], "", s)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[s.Text(k)] = mapValue(val, k, s)
		}
		return out
	}
	return v
}

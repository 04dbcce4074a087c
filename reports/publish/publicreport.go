package publish

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Public formats are read by others: md, html, JUnit, the docs block and
// the completion summary are rendered from the public copy a Publisher
// makes (Publisher.Public), the others (csv, json, table, tsv) from
// the exact evidence.

// Scrubber builds a report's scrubber from what its evidence records and
// what the caller knows (o): the roots declared by the caller
// first, then each row's recorded roots (provenance.roots), the result
// roots the report was loaded from (each is $OUT), and what each row's
// command and provenance show (its --out, the directory of its --config,
// the virtual environment of its --aiperf; the directory of its bundle and
// its tokenizer when no other root holds them); the host names and the
// top-level directories and the users of every row's host and of the
// caller.
func (o Publisher) Scrubber(g *reports.GroupReport) *Scrubber {
	roots := slices.Clone(o.Roots)
	for _, root := range g.LoadRoots() {
		roots = append(roots, verdict.Root{Name: RootOut, Path: root})
	}
	hosts := slices.Clone(o.Identity.Hosts)
	topDirs, users := slices.Clone(o.Identity.TopDirs), slices.Clone(o.Identity.Users)
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
	return NewScrubber(roots, Identity{Hosts: hosts, Users: users, TopDirs: topDirs})
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
// mapped by the report's Scrubber (commands word by word; GroupReport.Mapped),
// the rest as it is, but the run host's listing of /
// (provenance.host_top_dirs), which fed the scrubber and is never
// published. A public copy is its own.
func (o Publisher) Public(g *reports.GroupReport) (*reports.GroupReport, error) {
	if g.IsPublic() {
		return g, nil
	}
	out, err := g.Mapped(o.Scrubber(g))
	if err != nil {
		return nil, err
	}
	for i := range out.Rows {
		if r := out.Rows[i].Result; r != nil {
			// Published, the run host's listing of / would fingerprint it.
			r.Provenance.HostTopDirs = nil
		}
	}
	return out, nil
}

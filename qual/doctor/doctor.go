// Package doctor checks a host before a long qualification run: GPUs,
// each family's executables and their versions, every bundle and its pin,
// tokenizers, corpora, AIPerf, free disk for evidence, and the TRTMC
// checkout's git state. Every problem comes with its fix; `trtmc-qual
// doctor` prints the checks and exits 0 when the host is ready, 3 when not.
// TRTMC's server, worker and interpreter contract is checked without a GPU
// (trtmc.go); `doctor --probe` proves it on a GPU node by starting the
// profile's server and worker once with the corpus's largest request
// (probe.go).
package doctor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Schema is the JSON schema of a doctor report.
const Schema = "trtmc-qual/doctor/v1"

// Check statuses. Only fail makes the host not ready.
const (
	StatusOK   = "ok"
	StatusWarn = "warn"
	StatusFail = "fail"
	StatusSkip = "skip"
)

// Check is one line of the report.
type Check struct {
	Area    string `json:"area"`
	Subject string `json:"subject"`
	Status  string `json:"status"`
	Detail  string `json:"detail"`
	Fix     string `json:"fix,omitempty"`
}

// Report is everything doctor found.
type Report struct {
	Schema string   `json:"schema"`
	Ready  bool     `json:"ready"`
	Groups []string `json:"groups"`
	Checks []Check  `json:"checks"`
}

// Options say what to check and how.
type Options struct {
	Inventory *inventory.Inventory
	Families  *families.Config
	// Groups to check (empty: every group of the inventory).
	Groups []string
	// Repo is the TRTMC checkout ("" : TRTMC_REPO, else not checked
	// unless a family needs it).
	Repo string
	// Out is the evidence root; MinFreeBytes the free space it needs.
	Out          string
	MinFreeBytes uint64

	AIPerfBin, AIPerfVersion string
	Tokenizer                string
	BinDir, Self             string

	Runner   proc.Runner
	GPUs     qual.GPUProbe
	LookPath func(string) (string, error)
	Getenv   func(string) string
	// FreeBytes reports the free space of the file system holding path.
	FreeBytes func(path string) (uint64, error)
}

// Run performs every check; it never stops at the first problem.
func Run(ctx context.Context, o Options) *Report {
	r := &Report{Schema: Schema, Checks: []Check{}}
	groups := o.Groups
	if len(groups) == 0 {
		groups = o.Inventory.GroupNames()
	}
	r.Groups = groups
	add := func(c Check) { r.Checks = append(r.Checks, c) }

	var profiles []*inventory.Profile
	needGPU, maxTP := false, 1
	usedFamilies := map[string]bool{}
	for _, g := range groups {
		grp := o.Inventory.Groups[g]
		for _, p := range grp.Profiles {
			if p.Exclusion != nil {
				add(Check{Area: "profile", Subject: p.ID, Status: StatusSkip, Detail: "excluded: " + p.Exclusion.Reason})
				continue
			}
			profiles = append(profiles, p)
			usedFamilies[p.Family] = true
			for _, h := range p.Hardware {
				if h != "cpu" {
					needGPU = true
				}
			}
			maxTP = max(maxTP, p.Parallelism.TP*max(p.Parallelism.CP, 1))
		}
	}

	checkGPUs(ctx, o, needGPU, maxTP, profiles, add)
	checkExecutables(ctx, o, usedFamilies, add)
	checkTRTMC(ctx, o, usedFamilies, add)
	checkAIPerf(ctx, o, add)
	for _, g := range groups {
		checkCorpus(o, o.Inventory.Groups[g], add)
	}
	checkRequestSizes(o, groups, add)
	for _, p := range profiles {
		checkBundle(o, p, add)
		if endpoint.NeedsTokenizer(o.Inventory.Groups[p.Group].Workload.EndpointType) {
			if id, err := qual.CheckTokenizer(p, o.Tokenizer); err != nil {
				add(Check{Area: "tokenizer", Subject: p.ID, Status: StatusFail, Detail: err.Error(),
					Fix: "export the checkpoint's tokenizer (tokenizer.json or tokenizer_config.json) to that directory, or fix tokenizer.path/sha256 in the inventory"})
			} else {
				add(Check{Area: "tokenizer", Subject: p.ID, Status: StatusOK, Detail: id.Path + pinNote(id.SHA256)})
			}
		}
	}
	checkDisk(o, add)
	checkRepo(ctx, o, usedFamilies, add)

	order := map[string]int{}
	for i, a := range []string{"profile", "family", "gpu", "executable", "trtmc", "aiperf", "repo", "disk", "corpus", "bundle", "tokenizer", "probe"} {
		order[a] = i
	}
	sort.SliceStable(r.Checks, func(i, j int) bool { return order[r.Checks[i].Area] < order[r.Checks[j].Area] })
	r.Ready = true
	for _, c := range r.Checks {
		if c.Status == StatusFail {
			r.Ready = false
		}
	}
	return r
}

func pinNote(sum string) string {
	if sum == "" {
		return ""
	}
	return " (tokenizer.json sha256 " + short(sum) + ")"
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func checkGPUs(ctx context.Context, o Options, need bool, maxTP int, profiles []*inventory.Profile, add func(Check)) {
	var gpus []verdict.GPU
	var err error
	if o.GPUs != nil {
		gpus, err = o.GPUs.List(ctx)
	}
	switch {
	case err != nil:
		add(Check{Area: "gpu", Subject: "nvidia-smi", Status: StatusFail, Detail: err.Error(), Fix: "repair the NVIDIA driver installation (nvidia-smi must run)"})
		return
	case len(gpus) == 0 && need:
		add(Check{Area: "gpu", Subject: "count", Status: StatusFail, Detail: "no NVIDIA GPU found (nvidia-smi is missing or lists none), but the profiles' hardware scope needs one",
			Fix: "run on a GPU node (the TRTMC profiles name gb300) with the NVIDIA driver installed"})
		return
	case len(gpus) == 0:
		add(Check{Area: "gpu", Subject: "count", Status: StatusOK, Detail: "no GPU; every profile's hardware scope is cpu"})
		return
	}
	names := map[string]int{}
	for _, g := range gpus {
		names[g.Name+", driver "+g.Driver]++
	}
	var desc []string
	for n, c := range names {
		desc = append(desc, fmt.Sprintf("%d x %s", c, n))
	}
	sort.Strings(desc)
	add(Check{Area: "gpu", Subject: "count", Status: StatusOK, Detail: fmt.Sprintf("%d GPU(s): %s", len(gpus), strings.Join(desc, "; "))})
	if maxTP > len(gpus) {
		var wide []string
		for _, p := range profiles {
			if n := p.Parallelism.TP * max(p.Parallelism.CP, 1); n > len(gpus) {
				wide = append(wide, fmt.Sprintf("%s (%d)", p.ID, n))
			}
		}
		add(Check{Area: "gpu", Subject: "parallelism", Status: StatusWarn,
			Detail: fmt.Sprintf("%s need more GPUs than the %d here; they cannot run on this host", strings.Join(wide, ", "), len(gpus)),
			Fix:    "run them on a host with enough GPUs, or leave them out with --only"})
	}
	for _, g := range gpus {
		if err := qual.CheckIdle(ctx, o.GPUs, g); err != nil {
			add(Check{Area: "gpu", Subject: "gpu " + g.Index, Status: StatusFail, Detail: err.Error(),
				Fix: "wait for the other job to finish, or choose idle GPUs with --gpus"})
		} else {
			add(Check{Area: "gpu", Subject: "gpu " + g.Index, Status: StatusOK, Detail: fmt.Sprintf("%s %s idle", g.Name, g.UUID)})
		}
	}
}

// checkExecutables finds every program the used families start: the
// argv[0] of each template and the executables they declare, with their
// versions.
func checkExecutables(ctx context.Context, o Options, used map[string]bool, add func(Check)) {
	vars := map[string]string{}
	for _, p := range families.Placeholders {
		vars[p] = "{" + p + "}"
	}
	vars["bin"], vars["self"] = o.BinDir, o.Self
	type exe struct {
		version []string
		users   []string
	}
	exes := map[string]*exe{}
	note := func(name, fam string, version []string) {
		e, ok := exes[name]
		if !ok {
			e = &exe{}
			exes[name] = e
		}
		if len(version) > 0 && len(e.version) == 0 {
			e.version = version
		}
		if !containsStr(e.users, fam) {
			e.users = append(e.users, fam)
		}
	}
	var fams []string
	for f := range used {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	for _, name := range fams {
		f, ok := o.Families.Families[name]
		if !ok {
			add(Check{Area: "family", Subject: name, Status: StatusFail, Detail: "not in the family configuration " + o.Families.File,
				Fix: "select the family file that defines it (--families / families: in the config)"})
			continue
		}
		for _, tmpl := range [][]string{f.Server, f.Native, f.Correctness, f.Prepare.Bundle, f.Prepare.Corpus} {
			if len(tmpl) == 0 {
				continue
			}
			argv, err := families.Expand(tmpl[:1], vars)
			if err != nil || strings.Contains(argv[0], "{") {
				continue
			}
			note(argv[0], name, nil)
		}
		for _, e := range f.Executables {
			note(e.Name, name, e.Version)
		}
	}
	var names []string
	for n := range exes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := exes[n]
		users := strings.Join(e.users, ", ")
		path, err := o.LookPath(n)
		if err != nil {
			add(Check{Area: "executable", Subject: n, Status: StatusFail, Detail: fmt.Sprintf("not found (needed by %s)", users),
				Fix: installHint(n)})
			continue
		}
		detail := path
		status := StatusOK
		if len(e.version) > 0 {
			v, err := version(ctx, o.Runner, e.version)
			if err != nil {
				status = StatusWarn
				detail += "; version unknown: " + text.FirstLine(err.Error())
			} else {
				detail += "; " + v
			}
		}
		add(Check{Area: "executable", Subject: n, Status: status, Detail: detail + " (for " + users + ")"})
	}
}

func installHint(name string) string {
	switch name {
	case "trtmc-server":
		return "install TRTMC from its checkout into a Python 3.12 environment (pip install '.[serve]': TRTMC is not on the public package index) and put that environment's bin on PATH"
	case "trtmc":
		return "install TRTMC from its checkout (pip install '.[serve]', which ships trtmc) or put the checkout's build/trtmc on PATH"
	case "pytest":
		return "pip install pytest in the TRTMC environment (the family's e2e case runs under it)"
	}
	return "install it or put it on PATH"
}

func version(ctx context.Context, r proc.Runner, argv []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	if _, err := r.Run(ctx, proc.Spec{Name: "version", Argv: argv, Stdout: &out, Stderr: &out}); err != nil {
		return "", err
	}
	return text.FirstLine(strings.TrimSpace(out.String())), nil
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func checkAIPerf(ctx context.Context, o Options, add func(Check)) {
	d := &aiperf.Driver{Runner: o.Runner}
	vc, err := d.CheckVersion(ctx, o.AIPerfBin, o.AIPerfVersion, false)
	if err != nil {
		add(Check{Area: "aiperf", Subject: o.AIPerfBin, Status: StatusFail, Detail: err.Error(),
			Fix: fmt.Sprintf("pip install aiperf==%s in a virtual environment and point --aiperf (aiperf: in the config) at it", o.AIPerfVersion)})
		return
	}
	add(Check{Area: "aiperf", Subject: o.AIPerfBin, Status: StatusOK, Detail: "aiperf " + vc.Got})
}

func checkCorpus(o Options, g *inventory.Group, add func(Check)) {
	dir := g.CorpusPath()
	subject := g.Name + " corpus"
	entries, err := aiperf.LoadCorpus(dir)
	if err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "corpus.json")); os.IsNotExist(statErr) && preparesCorpus(o, g) {
			add(Check{Area: "corpus", Subject: subject, Status: StatusWarn, Detail: dir + " has no corpus.json; `run` will prepare it with the family's prepare.corpus command"})
			return
		}
		add(Check{Area: "corpus", Subject: subject, Status: StatusFail, Detail: err.Error(),
			Fix: "provide the corpus: its images and corpus.json (trtmc-qual corpus init " + dir + "; docs/trtmc.md \"Dataset\")"})
		return
	}
	if want := g.Workload.Dataset.SHA256; want != "" {
		if got, err := inventory.CorpusSHA256(context.Background(), dir); err != nil || got != want {
			add(Check{Area: "corpus", Subject: subject, Status: StatusFail, Detail: fmt.Sprintf("corpus.json sha256 %s, pinned %s", got, want),
				Fix: "restore the pinned corpus or update workload.dataset.sha256 deliberately"})
			return
		}
	}
	if typ, ok := endpoint.Lookup(g.Workload.EndpointType); ok {
		for _, e := range entries {
			if p := typ.CheckEntry(e.Question); p != nil {
				add(Check{Area: "corpus", Subject: subject, Status: StatusFail, Detail: "entry " + e.ID + " " + p.Problem, Fix: p.Fix})
				return
			}
		}
	}
	n := g.Workload.Warmup + g.Workload.Measured
	sizes, err := aiperf.ImageSizes(entries, n)
	if err != nil {
		add(Check{Area: "corpus", Subject: subject, Status: StatusFail, Detail: err.Error(), Fix: "use PNG, JPEG or GIF images"})
		return
	}
	add(Check{Area: "corpus", Subject: subject, Status: StatusOK, Detail: fmt.Sprintf("%s: %d images, %d distinct sizes over %d requests", dir, len(entries), len(sizes), n)})
}

// preparesCorpus: every family of the group can build a missing corpus.
func preparesCorpus(o Options, g *inventory.Group) bool {
	for _, p := range g.Profiles {
		if f := o.Families.Families[p.Family]; f == nil || len(f.Prepare.Corpus) == 0 {
			return false
		}
	}
	return len(g.Profiles) > 0
}

func checkBundle(o Options, p *inventory.Profile, add func(Check)) {
	path := p.BundlePath()
	f := o.Families.Families[p.Family]
	prepare := f != nil && len(f.Prepare.Bundle) > 0
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		c := Check{Area: "bundle", Subject: p.ID, Status: StatusFail, Detail: path + " is missing",
			Fix: fmt.Sprintf("build or link it: trtmc-qual adapter bundle --profile %s --bundle %s --build (or set TRTMC_BUNDLE_DIR)", p.ID, path)}
		if prepare {
			c.Status, c.Detail, c.Fix = StatusWarn, path+" is missing; `run` will prepare it with the family's prepare.bundle command", ""
		}
		add(c)
		return
	}
	sum, err := inventory.BundleSHA256(context.Background(), path)
	if err != nil {
		add(Check{Area: "bundle", Subject: p.ID, Status: StatusFail, Detail: err.Error(), Fix: "make the bundle readable"})
		return
	}
	switch want := p.Bundle.SHA256; {
	case want == "":
		add(Check{Area: "bundle", Subject: p.ID, Status: StatusWarn, Detail: fmt.Sprintf("%s sha256 %s is not pinned", path, sum),
			Fix: fmt.Sprintf("pin it in the inventory (%s): trtmc-qual inventory set %s --pin bundle --write, which sets bundle.sha256: %s",
				p.Where("bundle"), p.ID, sum)})
	case want != sum:
		add(Check{Area: "bundle", Subject: p.ID, Status: StatusFail, Detail: fmt.Sprintf("%s sha256 %s, the inventory pins %s: not the bundle that was qualified", path, sum, want),
			Fix: "restore the pinned bundle, or re-pin deliberately after re-qualifying"})
	default:
		add(Check{Area: "bundle", Subject: p.ID, Status: StatusOK, Detail: fmt.Sprintf("%s sha256 %s = pin", path, short(sum))})
	}
}

func checkDisk(o Options, add func(Check)) {
	dir := o.Out
	for {
		if _, err := os.Stat(dir); err == nil || dir == filepath.Dir(dir) {
			break
		}
		dir = filepath.Dir(dir)
	}
	free, err := o.FreeBytes(dir)
	if err != nil {
		add(Check{Area: "disk", Subject: o.Out, Status: StatusFail, Detail: err.Error(), Fix: "point --out at a writable file system"})
		return
	}
	gib := func(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
	if free < o.MinFreeBytes {
		add(Check{Area: "disk", Subject: o.Out, Status: StatusFail, Detail: fmt.Sprintf("%s free on %s, evidence needs %s", gib(free), dir, gib(o.MinFreeBytes)),
			Fix: "free space there, or point --out (out: in the config) at a larger file system"})
		return
	}
	add(Check{Area: "disk", Subject: o.Out, Status: StatusOK, Detail: fmt.Sprintf("%s free on %s", gib(free), dir)})
}

// checkRepo reports the TRTMC checkout the correctness cases run in: its
// commit, and whether its work tree differs from that commit.
func checkRepo(ctx context.Context, o Options, used map[string]bool, add func(Check)) {
	repo := o.Repo
	if repo == "" && o.Getenv != nil {
		repo = o.Getenv("TRTMC_REPO")
	}
	needs := false
	for name := range used {
		if f := o.Families.Families[name]; f != nil && len(f.Correctness) > 2 && f.Correctness[1] == "adapter" && f.Correctness[2] == "correctness" {
			needs = true
		}
	}
	if repo == "" {
		if needs {
			add(Check{Area: "repo", Subject: "TRTMC checkout", Status: StatusFail, Detail: "unknown: the families' correctness cases run in a TRTMC checkout",
				Fix: "pass --repo PATH or set TRTMC_REPO to the checkout of the commit being qualified"})
		}
		return
	}
	// The checkout is foreign: git runs with its hooks and configuration
	// disabled (gitread.Args, the one git command line), and with every
	// filter and diff driver it configures emptied before anything looks
	// at its work tree.
	var drivers []string
	git := func(args ...string) (string, error) {
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err := o.Runner.Run(ctx, proc.Spec{Name: "git", Argv: gitread.Args("git", repo, drivers, args...), Env: gitread.SafeEnv(), Stdout: &out, Stderr: &out})
		return strings.TrimSpace(out.String()), err
	}
	commit, err := git("rev-parse", "HEAD")
	if err != nil {
		add(Check{Area: "repo", Subject: repo, Status: StatusFail, Detail: "not a git checkout: " + text.FirstLine(commit+" "+err.Error()),
			Fix: "clone NVIDIA/TensorRT-Model-Connect there (git clone ...; git checkout <commit>)"})
		return
	}
	if bare, _ := git("rev-parse", "--is-bare-repository"); bare == "true" {
		add(Check{Area: "repo", Subject: repo, Status: StatusFail, Detail: "commit " + commit + ", but a bare repository: the e2e cases run in a work tree",
			Fix: "git clone it and check out the commit being qualified"})
		return
	}
	// Only status refreshes the index's view of files whose stat data
	// changed, so a checkout that was touched but not edited is clean; it
	// runs with no fsmonitor, no hooks and no driver (the configuration
	// listed first, an empty list is exit 1).
	list, _ := git(gitread.DriverConfigArgs...)
	drivers = gitread.DriverOverrides([]byte(list))
	status, err := git("status", "--porcelain", "--untracked-files=no", "--ignore-submodules=all")
	switch {
	case err != nil:
		add(Check{Area: "repo", Subject: repo, Status: StatusFail, Detail: "git status: " + err.Error(), Fix: "repair the checkout"})
	case status != "":
		n := len(strings.Split(status, "\n"))
		add(Check{Area: "repo", Subject: repo, Status: StatusFail, Detail: fmt.Sprintf("commit %s, dirty: %d tracked file(s) differ from it (first: %s)", commit, n, text.FirstLine(status)),
			Fix: "commit or stash the changes: a qualification must name the exact sources it tested"})
	default:
		add(Check{Area: "repo", Subject: repo, Status: StatusOK, Detail: "commit " + commit + ", clean"})
	}
}

// Add appends checks (a probe's) and updates readiness.
func (r *Report) Add(cs ...Check) {
	for _, c := range cs {
		r.Checks = append(r.Checks, c)
		if c.Status == StatusFail {
			r.Ready = false
		}
	}
}

// Table renders the report.
func (r *Report) Table() reports.Table {
	t := reports.Table{Header: []string{"area", "subject", "status", "detail", "fix"}}
	for _, c := range r.Checks {
		t.Rows = append(t.Rows, []string{c.Area, c.Subject, c.Status, c.Detail, c.Fix})
	}
	return t
}

// Summary is one line: ready or not, and the counts.
func (r *Report) Summary() string {
	n := map[string]int{}
	for _, c := range r.Checks {
		n[c.Status]++
	}
	word := "ready"
	if !r.Ready {
		word = "NOT ready"
	}
	return fmt.Sprintf("doctor: %s for %s: %d ok, %d warning(s), %d problem(s), %d skipped",
		word, strings.Join(r.Groups, ", "), n[StatusOK], n[StatusWarn], n[StatusFail], n[StatusSkip])
}

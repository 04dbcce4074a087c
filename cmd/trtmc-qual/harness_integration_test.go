//go:build integration

package main

// Shared machinery of the CLI-level reliability tests (test tier iv): the
// real bin/trtmc-qual and trtmc-refserver built once, the real AIPerf, a
// per-test inventory and family configuration, and the invariants every
// scenario asserts (no child outlives the run, no torn evidence).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Every trtmc-qual the tests start leads a session of its own (setsid), and
// every child it starts stays in that session even though each gets its own
// process group: scanning /proc for the session finds every process the run
// left behind, even after trtmc-qual itself was killed and its children were
// re-parented. AIPerf renames its processes (setproctitle), which clobbers
// their /proc environ, so the session is the reliable mark; markerEnv, set
// in trtmc-qual's environment and inherited by every child, additionally
// catches a child that started a session of its own.
const markerEnv = "TRTMC_RELIABILITY_MARKER"

// harness is everything the CLI tests share: built binaries, AIPerf, and
// prepared reference bundles and corpora.
type harness struct {
	root      string // the repository
	binDir    string // trtmc-qual and trtmc-refserver, built for this test binary
	qual      string
	refserver string
	aiperf    string
	tokenizer string
	ref       string // prepared bundles/ and corpora/
	fakes     string // qual/testdata/fakebin
}

var (
	harnessOnce   sync.Once
	sharedHarness harness
	harnessErr    error
	harnessTmp    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if harnessTmp != "" {
		_ = os.RemoveAll(harnessTmp)
	}
	trtmctest.Cleanup()
	os.Exit(code)
}

// getHarness builds the binaries and prepares the reference inputs once per
// test binary. A missing AIPerf fails under CI=true and skips otherwise.
func getHarness(t *testing.T) harness {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	aiperf := os.Getenv("TRTMC_QUAL_AIPERF")
	if aiperf == "" {
		aiperf = filepath.Join(root, ".venv", "bin", "aiperf")
	}
	if _, err := os.Stat(aiperf); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("AIPerf is not installed at %s (run make setup): CI never skips this tier", aiperf)
		}
		t.Skipf("AIPerf not installed at %s (run make setup)", aiperf)
	}
	harnessOnce.Do(func() { sharedHarness, harnessErr = buildHarness(root, aiperf) })
	require.NoError(t, harnessErr)
	return sharedHarness
}

func buildHarness(root, aiperf string) (harness, error) {
	tok := os.Getenv("TRTMC_QUAL_TOKENIZER")
	if tok == "" {
		tok = filepath.Join(root, ".venv", "tokenizer")
	}
	tmp, err := os.MkdirTemp("", "trtmc-qual-reliability-")
	if err != nil {
		return harness{}, err
	}
	harnessTmp = tmp
	h := harness{root: root, binDir: filepath.Join(tmp, "bin"), aiperf: aiperf, tokenizer: tok,
		ref: filepath.Join(tmp, "ref"), fakes: filepath.Join(root, "qual", "testdata", "fakebin")}
	h.qual = filepath.Join(h.binDir, "trtmc-qual")
	h.refserver = filepath.Join(h.binDir, "trtmc-refserver")
	build := exec.Command("go", "build", "-o", h.binDir+"/", "./cmd/trtmc-qual", "./cmd/trtmc-refserver")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return h, fmt.Errorf("build: %v\n%s", err, out)
	}
	// The same commands families.yaml runs to prepare missing inputs, once,
	// so parallel tests never race to build them.
	for _, argv := range [][]string{
		{"make-bundle", "--family", "ref-detect", "--precision", "fp32", "--out", filepath.Join(h.ref, "bundles", "ref-detect-fp32.bundle")},
		{"make-bundle", "--family", "ref-detect", "--precision", "fp16", "--out", filepath.Join(h.ref, "bundles", "ref-detect-fp16.bundle")},
		{"corpus", "--family", "ref-detect", "--out", filepath.Join(h.ref, "corpora", "ref-detect"), "--count", "24"},
	} {
		if err := os.MkdirAll(filepath.Join(h.ref, "bundles"), 0o755); err != nil {
			return h, err
		}
		if out, err := exec.Command(h.refserver, argv...).CombinedOutput(); err != nil {
			return h, fmt.Errorf("trtmc-refserver %s: %v\n%s", strings.Join(argv, " "), err, out)
		}
	}
	return h, nil
}

// doc is a YAML document edited as generic maps.
type doc = map[string]any

func loadYAML(t *testing.T, path string) doc {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var d doc
	require.NoError(t, yaml.Unmarshal(data, &d))
	return d
}

func writeYAML(t *testing.T, path string, d doc) {
	t.Helper()
	data, err := yaml.Marshal(d)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// family returns one family's map in a families document.
func family(d doc, name string) doc { return d["families"].(doc)[name].(doc) }

// setFamilyEnv sets an environment variable for every child of a family.
func setFamilyEnv(d doc, name, key, value string) {
	f := family(d, name)
	env, _ := f["env"].(doc)
	if env == nil {
		env = doc{}
	}
	env[key] = value
	f["env"] = env
}

// setTimeout overrides one stage deadline of a family ("startup", "stop", ...).
func setTimeout(d doc, name, stage, value string) { family(d, name)["timeouts"].(doc)[stage] = value }

// group returns one group's map in an inventory document.
func group(d doc, name string) doc { return d["groups"].(doc)[name].(doc) }

// scenario is one run of bin/trtmc-qual.
type scenario struct {
	// group and only select the checkpoints (default detection / ref-detect-small).
	group string
	only  []string
	// fault is TRTMC_REFSERVER_FAULT for the ref-detect family.
	fault string
	// families and inventory edit the per-test configuration; prepare is
	// called with its directory once it is written, before the run.
	families  func(d doc)
	inventory func(d doc)
	prepare   func(t *testing.T, cfg string)
	// args are extra arguments after `run`; env extra environment.
	args []string
	env  []string
	// aiperf replaces the aiperf executable.
	aiperf string
	// out is the evidence root (default a fresh temporary directory).
	out string
	// during is called once the process has started, with a way to watch
	// its stderr (for signal tests).
	during func(t *testing.T, p *running)
}

// running is a started trtmc-qual.
type running struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	stderr bytes.Buffer
	lines  chan string
	done   chan struct{}
}

// waitLine waits until a stderr line contains substr.
func (p *running) waitLine(t *testing.T, substr string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("trtmc-qual exited before printing %q; stderr:\n%s", substr, p.stderrString())
			}
			if strings.Contains(l, substr) {
				return l
			}
		case <-deadline:
			t.Fatalf("no stderr line with %q after %s; stderr:\n%s", substr, timeout, p.stderrString())
		}
	}
}

func (p *running) stderrString() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

func (p *running) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// outcome is what a run of trtmc-qual left.
type outcome struct {
	code   int    // exit status; -1 when killed by a signal
	signal string // the signal that killed it, if any
	stdout string
	stderr string
	out    string // the evidence root
	marker string
	config string // the directory holding inventory.yaml and families.yaml
	// session is trtmc-qual's pid, the id of the session it led.
	session int
	// args are the scenario's extra arguments after `run`.
	args []string
}

// result reads OUT/<group>/<id>/result.json; it fails the test when the
// file is missing or not a complete JSON document.
func (o outcome) result(t *testing.T, grp, id string) verdict.Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(o.out, grp, id, reports.ResultFile))
	require.NoError(t, err, "stderr:\n%s", o.stderr)
	var r verdict.Result
	require.NoError(t, json.Unmarshal(data, &r))
	return r
}

// configFiles writes the per-test inventory and family configuration:
// the shipped ones, with bundles and corpora in the shared prepared
// directory and the scenario's edits applied.
func (h harness) configFiles(t *testing.T, sc scenario) string {
	t.Helper()
	dir := t.TempDir()
	fams := loadYAML(t, filepath.Join(h.root, "families", "families.yaml"))
	if sc.fault != "" {
		setFamilyEnv(fams, "ref-detect", "TRTMC_REFSERVER_FAULT", sc.fault)
	}
	if sc.families != nil {
		sc.families(fams)
	}
	writeYAML(t, filepath.Join(dir, "families.yaml"), fams)

	inv := loadYAML(t, filepath.Join(h.root, "inventory", "reference.yaml"))
	delete(inv["groups"].(doc), "vlm") // only detection inputs are prepared
	det := group(inv, "detection")
	det["workload"].(doc)["dataset"].(doc)["corpus"] = filepath.Join(h.ref, "corpora", "ref-detect")
	for _, p := range det["profiles"].([]any) {
		b := p.(doc)["bundle"].(doc)
		b["path"] = filepath.Join(h.ref, "bundles", filepath.Base(b["path"].(string)))
	}
	if sc.inventory != nil {
		sc.inventory(inv)
	}
	writeYAML(t, filepath.Join(dir, "inventory.yaml"), inv)
	return dir
}

// run runs bin/trtmc-qual run for the scenario and waits for it (at most
// timeout). The process is killed if the test ends first.
func (h harness) run(t *testing.T, sc scenario, timeout time.Duration) outcome {
	t.Helper()
	if sc.group == "" {
		sc.group = "detection"
	}
	if sc.only == nil {
		sc.only = []string{"ref-detect-small"}
	}
	if sc.out == "" {
		sc.out = filepath.Join(t.TempDir(), "out")
	}
	cfg := h.configFiles(t, sc)
	if sc.prepare != nil {
		sc.prepare(t, cfg)
	}
	aiperf := h.aiperf
	if sc.aiperf != "" {
		aiperf = sc.aiperf
	}
	args := []string{"run", "--group", sc.group, "--out", sc.out, "--gpus", "cpu",
		"--inventory", filepath.Join(cfg, "inventory.yaml"), "--families", filepath.Join(cfg, "families.yaml"),
		"--aiperf", aiperf, "--tokenizer", h.tokenizer, "--bin-dir", h.binDir, "--format", "tsv"}
	if len(sc.only) > 0 {
		args = append(args, "--only", strings.Join(sc.only, ","))
	}
	args = append(args, sc.args...)
	marker := fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid(), time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.qual, args...)
	cmd.Dir = cfg // no trtmc-qual.yaml there: flags are the whole configuration
	cmd.Env = append(cleanEnv(), markerEnv+"="+marker)
	cmd.Env = append(cmd.Env, sc.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	p := &running{cmd: cmd, lines: make(chan string, 1024), done: make(chan struct{})}
	cmd.Stdout = &p.stdout
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default: // nobody is watching; the text is kept in stderr
			}
		}
	}()
	if sc.during != nil {
		sc.during(t, p)
	}
	for range p.lines { // drain: the pipe must be read to EOF before Wait
	}
	err = cmd.Wait()
	o := outcome{stdout: p.stdout.String(), stderr: p.stderrString(), out: sc.out, marker: marker, config: cfg, session: cmd.Process.Pid, args: sc.args}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		o.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			o.signal = ws.Signal().String()
		}
	default:
		require.NoError(t, err)
	}
	require.NoError(t, ctx.Err(), "trtmc-qual did not finish within %s; stderr:\n%s", timeout, o.stderr)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("trtmc-qual exit %d %s\nstdout:\n%s\nstderr:\n%s", o.code, o.signal, o.stdout, o.stderr)
		}
	})
	return o
}

// cleanEnv is the test's environment without TRTMC_QUAL_* settings, so only
// the flags configure the harness.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TRTMC_QUAL_") && !strings.HasPrefix(kv, "TRTMC_SERVE_TOKEN=") &&
			!strings.HasPrefix(kv, "TRTMC_REFSERVER_FAULT=") {
			env = append(env, kv)
		}
	}
	return env
}

// leftover is a process a run left behind.
type leftover struct {
	pid, pgid, session int
	cmdline            string
}

// leftovers scans /proc for live processes in the session, or carrying the
// marker in their environment. Zombies are not counted: they are dead and
// only wait to be reaped.
func leftovers(session int, marker string) []leftover {
	want := []byte(markerEnv + "=" + marker + "\x00")
	entries, _ := os.ReadDir("/proc")
	var out []leftover
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...; comm may hold anything.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 4 || f[0] == "Z" {
			continue
		}
		pgid, _ := strconv.Atoi(f[2])
		sid, _ := strconv.Atoi(f[3])
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if sid != session && !bytes.Contains(append(env, 0), want) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, leftover{pid: pid, pgid: pgid, session: sid,
			cmdline: strings.ReplaceAll(string(bytes.TrimRight(cmdline, "\x00")), "\x00", " ")})
	}
	return out
}

// assertNoOrphans checks, not assumes, that no process the run started is
// alive once trtmc-qual has exited. A SIGKILLed process takes a moment to
// disappear, and after `kill -9` of trtmc-qual AIPerf's services notice
// their parent's death within a few seconds, so it polls for up to ten
// seconds, then kills and reports whatever is left.
func assertNoOrphans(t *testing.T, o outcome) {
	t.Helper()
	var left []leftover
	for deadline := time.Now().Add(10 * time.Second); ; {
		left = leftovers(o.session, o.marker)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, l := range left {
		_ = syscall.Kill(l.pid, syscall.SIGKILL)
		assert.Failf(t, "orphan", "process %d (group %d, session %d) outlived the run: %s", l.pid, l.pgid, l.session, l.cmdline)
	}
}

// assertEvidenceSound walks the evidence root: every JSON document the
// harness writes (results, manifests, tables, inventories) is complete, no
// temporary file of an atomic write is left behind (unless the harness was
// killed, allowTemp), and the group tables load.
func assertEvidenceSound(t *testing.T, out string, allowTemp bool) {
	t.Helper()
	if _, err := os.Stat(out); errors.Is(err, fs.ErrNotExist) {
		return
	}
	var results int
	err := filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if name == "aiperf" || name == "ref" {
				return filepath.SkipDir // the child's own files; checked by Collect
			}
			return nil
		}
		if strings.Contains(name, ".tmp-") && !allowTemp {
			t.Errorf("temporary file of an atomic write left behind: %s", path)
		}
		switch name {
		case reports.ResultFile, "manifest.json", "results.json", reports.InventoryFile, "correctness.json":
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			var v any
			if !assert.NoError(t, json.Unmarshal(data, &v), "%s is not a complete JSON document", path) {
				return nil
			}
			if name == reports.ResultFile {
				results++
			}
		}
		return nil
	})
	require.NoError(t, err)
	// Tables, when present, are complete renderings of what was stored.
	entries, _ := os.ReadDir(out)
	for _, g := range entries {
		md := filepath.Join(out, g.Name(), "results.md")
		if _, err := os.Stat(md); err != nil {
			continue
		}
		rep, err := reports.Load([]string{out}, g.Name())
		if !assert.NoError(t, err, "group %s evidence does not load", g.Name()) {
			continue
		}
		// As `report --from OUT -o md` renders it on this host (its users
		// and entries of /, as the run saw them).
		rep.Publisher = publicOptions(nil, os.Getenv, nil)
		var buf bytes.Buffer
		require.NoError(t, reports.Render(&buf, rep, reports.FormatMarkdown))
		got, err := os.ReadFile(md)
		require.NoError(t, err)
		assert.Equal(t, buf.String(), string(got), "%s is not the table of the stored results", md)
	}
}

// assertPublishable: the rows an honest run stored are the rows a
// re-derivation by the run's own family configuration gives, so every
// publication of them (export, --update-doc, -o summary) goes through —
// a broken, failed or interrupted row included (issue 32 item 5: a
// publication refuses only stored figures that are not the evidence's).
func assertPublishable(t *testing.T, o outcome) {
	t.Helper()
	fams, err := families.Load(filepath.Join(o.config, "families.yaml"))
	require.NoError(t, err)
	entries, _ := os.ReadDir(o.out)
	for _, g := range entries {
		if !g.IsDir() || strings.HasPrefix(g.Name(), ".") {
			continue
		}
		_, _, err := qual.Publishable(context.Background(), qual.RejudgeOptions{Roots: []string{o.out}, Group: g.Name(), Families: fams,
			Registry: families.DefaultRegistry(), Now: time.Now(), NoJoined: true, NoWrite: true})
		assert.NoError(t, err, "group %s: the stored rows are not the re-derived ones", g.Name())
	}
}

// reasonWith returns the first reason with the code, or fails.
func reasonWith(t *testing.T, r verdict.Result, code verdict.Code) verdict.Reason {
	t.Helper()
	for _, rs := range r.Reasons {
		if rs.Code == code {
			return rs
		}
	}
	t.Fatalf("no reason with code %s in %+v", code, r.Reasons)
	return verdict.Reason{}
}

// stageStatus returns the status of a named stage in the result.
func stageStatus(r verdict.Result, name string) string {
	for _, s := range r.Stages {
		if s.Name == name {
			return s.Status
		}
	}
	return ""
}

// command returns the recorded command of a stage.
func command(t *testing.T, r verdict.Result, stage string) verdict.Command {
	t.Helper()
	for _, c := range r.Provenance.Commands {
		if c.Stage == stage {
			return c
		}
	}
	t.Fatalf("no %s command recorded in %+v", stage, r.Provenance.Commands)
	return verdict.Command{}
}

// assertAccounted checks that nothing was dropped silently: per phase, the
// requests the client reported add up to exactly one status each.
func assertAccounted(t *testing.T, r verdict.Result) {
	t.Helper()
	for phase, c := range r.RequestsByPhase {
		sum := c.Matched + c.Mismatched + c.Errored + c.MissingNative + c.MissingHTTP + c.MissingServerRecord + c.Duplicates + c.Meaningless +
			c.UnknownConversation + c.Inconsistent
		assert.Equal(t, c.Sent, sum, "phase %s: %d sent but %d accounted for: %+v", phase, c.Sent, sum, c)
	}
}

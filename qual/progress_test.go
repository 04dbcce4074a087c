package qual

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeTerm is a terminal that understands what Progress writes: text,
// \n, \r, ESC[nA (cursor up n) and ESC[J (erase to the end of the
// screen). Anything else fails the test: an escape the terminal does not
// know would show as garbage.
type fakeTerm struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
	row   int
	col   int
}

var csi = regexp.MustCompile(`^\x1b\[(\d*)([A-Za-z])`)

func (f *fakeTerm) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := string(b)
	for len(s) > 0 {
		for f.row >= len(f.lines) {
			f.lines = append(f.lines, "")
		}
		switch {
		case s[0] == '\n':
			f.row++
			f.col = 0
			s = s[1:]
		case s[0] == '\r':
			f.col = 0
			s = s[1:]
		case s[0] == 0x1b:
			m := csi.FindStringSubmatch(s)
			if m == nil {
				f.t.Errorf("unknown escape in %q", s)
				return len(b), nil
			}
			switch m[2] {
			case "A":
				n, _ := strconv.Atoi(m[1])
				f.row = max(f.row-max(n, 1), 0)
			case "J":
				f.lines[f.row] = f.lines[f.row][:min(f.col, len(f.lines[f.row]))]
				f.lines = f.lines[:f.row+1]
			default:
				f.t.Errorf("unexpected escape %q", m[0])
			}
			s = s[len(m[0]):]
		default:
			i := strings.IndexAny(s, "\n\r\x1b")
			if i < 0 {
				i = len(s)
			}
			line := []rune(f.lines[f.row])
			for len(line) < f.col {
				line = append(line, ' ')
			}
			text := []rune(s[:i])
			end := f.col + len(text)
			if end < len(line) {
				line = append(append(line[:f.col:f.col], text...), line[end:]...)
			} else {
				line = append(line[:f.col], text...)
			}
			f.lines[f.row] = string(line)
			f.col = end
			s = s[i:]
		}
	}
	return len(b), nil
}

// screen is what the terminal shows, trailing empty line dropped.
func (f *fakeTerm) screen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]string(nil), f.lines...)
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func TestProgressTerminalBlock(t *testing.T) {
	clock := newFakeClock()
	term := &fakeTerm{t: t}
	p := NewProgress(term, true, clock.Now)
	p.plan(3, map[string][]verdict.Stage{
		"a": {{Name: "preflight", DurationMS: 1000}, {Name: "server", DurationMS: 130_000}, {Name: "aiperf", DurationMS: 60_000}},
	})
	fmt.Fprintf(p, "trtmc-qual: group g: 3 checkpoint(s)\n")
	p.begin("a")
	p.stage("a", "preflight")
	clock.Add(time.Second)
	p.stage("a", "server")
	p.begin("b")
	p.stage("b", "preflight")
	clock.Add(2*time.Minute + 10*time.Second)
	p.Tick()
	assert.Equal(t, []string{
		"trtmc-qual: group g: 3 checkpoint(s)",
		"trtmc-qual: a: stage preflight",
		"trtmc-qual: a: stage server",
		"trtmc-qual: b: stage preflight",
		"a [1/3] · loading engine… 2m10s · ETA 1m00s",
		"b [2/3] · preflight 2m10s",
	}, term.screen())

	// The aiperf stage counts answered requests; the ETA is the previous
	// run's aiperf time less what has passed.
	p.stage("a", "aiperf")
	answered := 0
	p.requests("a", 55, func() int { return answered })
	answered = 21
	clock.Add(45 * time.Second)
	p.Tick()
	sc := term.screen()
	assert.Equal(t, "a [1/3] · aiperf 45s · 21/55 requests answered · ETA 15s", sc[len(sc)-2])
	assert.Equal(t, "b [2/3] · preflight 2m55s", sc[len(sc)-1])

	// A finished checkpoint's line goes; Close clears the block.
	p.end("a")
	assert.Equal(t, "b [2/3] · preflight 2m55s", last(term.screen()))
	assert.NotContains(t, strings.Join(term.screen(), "\n"), "a [1/3]")
	require.NoError(t, p.Close())
	assert.Equal(t, "trtmc-qual: a: stage aiperf", last(term.screen()))
}

func last(s []string) string { return s[len(s)-1] }

// TestProgressNeverSharesALine interleaves log writes from several
// goroutines (each a whole line, as logf and the AIPerf driver write them)
// and one writer's line in pieces with redraws and stage changes: every
// line on the screen is a whole log line or a whole progress line.
func TestProgressNeverSharesALine(t *testing.T) {
	clock := newFakeClock()
	term := &fakeTerm{t: t}
	p := NewProgress(term, true, clock.Now)
	p.plan(4, nil)
	for _, id := range []string{"p1", "p2", "p3"} {
		p.begin(id)
		p.stage(id, "aiperf")
		p.requests(id, 55, func() int { return 7 })
	}
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				fmt.Fprintf(p, "trtmc-qual: log g%d line %d\n", g, i)
				p.Tick()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 100 {
			clock.Add(time.Second)
			p.Tick()
		}
	}()
	wg.Wait()
	// One writer's line in pieces, with redraws between them.
	fmt.Fprint(p, "trtmc-qual: log g3 ")
	p.Tick()
	fmt.Fprint(p, "line 0")
	p.Tick()
	fmt.Fprint(p, "\n")
	p.Tick()
	logLine := regexp.MustCompile(`^trtmc-qual: (log g\d line \d+|p\d: stage aiperf)$`)
	progLine := regexp.MustCompile(`^p\d \[\d/4\] · aiperf \d+(m\d\ds|s) · 7/55 requests answered$`)
	sc := term.screen()
	logs := 0
	for _, l := range sc {
		switch {
		case logLine.MatchString(l):
			logs++
		case progLine.MatchString(l):
		default:
			t.Errorf("a line mixes log and progress: %q", l)
		}
	}
	assert.Equal(t, 3*40+3+1, logs, "every log line is on the screen, whole")
	// The block is the last thing on the screen, after every log line.
	for _, l := range sc[len(sc)-3:] {
		assert.Regexp(t, progLine, l)
	}
}

func TestProgressPlain(t *testing.T) {
	clock := newFakeClock()
	var buf bytes.Buffer
	p := NewProgress(&buf, false, clock.Now)
	p.plan(2, map[string][]verdict.Stage{"a": {{Name: "server", DurationMS: 30_000}, {Name: "aiperf", DurationMS: 20_000}}})
	p.begin("a")
	p.stage("a", "server")
	for range 40 { // 40 s in 1 s ticks: lines at 15 s and 30 s
		clock.Add(time.Second)
		p.Tick()
	}
	p.stage("a", "aiperf")
	p.requests("a", 55, func() int { return 12 })
	clock.Add(5 * time.Second)
	p.Tick() // 5 s into the stage: nothing yet
	clock.Add(10 * time.Second)
	p.Tick()
	fmt.Fprint(p, "trtmc-qual: a: PASS\n")
	assert.Equal(t, strings.Join([]string{
		"trtmc-qual: a [1/2] · stage server: loading engine… · ETA 50s",
		"trtmc-qual: a [1/2] · stage server: loading engine… 15s · ETA 35s",
		"trtmc-qual: a [1/2] · stage server: loading engine… 30s · ETA 20s",
		"trtmc-qual: a [1/2] · stage aiperf · ETA 20s",
		"trtmc-qual: a [1/2] · stage aiperf 15s · 12/55 requests answered · ETA 5s",
		"trtmc-qual: a: PASS",
	}, "\n")+"\n", buf.String())
	assert.NotContains(t, buf.String(), "\x1b", "no escapes in a log file")
}

func TestProgressPartialLogLineEndsBeforeProgress(t *testing.T) {
	clock := newFakeClock()
	var buf bytes.Buffer
	p := NewProgress(&buf, false, clock.Now)
	p.begin("a")
	fmt.Fprint(p, "aiperf: half a line")
	p.stage("a", "aiperf")
	fmt.Fprint(p, " (rest)\n")
	assert.Equal(t, "aiperf: half a line\ntrtmc-qual: a [1/1] · stage aiperf\n (rest)\n", buf.String())
}

// Issue 36: every stage line said "0s" (the time the stage it starts has
// run). A stage line now says how long the stages before it took, as the
// pipeline recorded them, and the checkpoint's last stages are said before
// its verdict.
func TestProgressSaysHowLongStagesTook(t *testing.T) {
	for _, tty := range []bool{false, true} {
		clock := newFakeClock()
		term := &fakeTerm{t: t}
		p := NewProgress(term, tty, clock.Now)
		p.plan(1, nil)
		p.begin("a")
		p.stage("a", "preflight")
		p.stageDone("a", verdict.Stage{Name: "preflight", Status: verdict.StageOK, DurationMS: 1234})
		p.stage("a", "server")
		p.stageDone("a", verdict.Stage{Name: "server", Status: verdict.StageOK, DurationMS: 310.4})
		p.stageDone("a", verdict.Stage{Name: "correctness", Status: verdict.StageSkipped})
		p.stage("a", "stop-server")
		p.stageDone("a", verdict.Stage{Name: "stop-server", Status: verdict.StageError, DurationMS: 130_000})
		p.stageDone("a", verdict.Stage{Name: "gpu-release", Status: verdict.StageOK, DurationMS: 0.2})
		p.finished("a")
		fmt.Fprint(p, "trtmc-qual: a: ERROR\n")
		p.end("a")
		require.NoError(t, p.Close())
		want := []string{
			"trtmc-qual: a [1/1] · stage preflight",
			"trtmc-qual: a [1/1] · stage server: loading engine… · preflight took 1.2s",
			"trtmc-qual: a [1/1] · stage stop-server · server took 310ms · correctness skipped",
			"trtmc-qual: a [1/1] · stop-server failed after 2m10s · gpu-release took <1ms",
			"trtmc-qual: a: ERROR",
		}
		if tty {
			want = []string{
				"trtmc-qual: a: stage preflight",
				"trtmc-qual: a: stage server · preflight took 1.2s",
				"trtmc-qual: a: stage stop-server · server took 310ms · correctness skipped",
				"trtmc-qual: a: stop-server failed after 2m10s · gpu-release took <1ms",
				"trtmc-qual: a: ERROR",
			}
		}
		assert.Equal(t, want, term.screen(), "tty %v", tty)
	}
}

// The durations a stage line prints are the ones the row records: each
// stage's own start and end by the run's clock (here a stage that takes
// 1.5 s of a fake clock), never the time the next stage has run.
func TestStageLinesPrintTheRecordedDurations(t *testing.T) {
	clock := newFakeClock()
	var buf bytes.Buffer
	var r recorder
	slow := r.stage("slow", nil)
	run := slow.run
	slow.run = func(cr *checkpointRun, ctx context.Context) error {
		clock.Add(1500 * time.Millisecond)
		return run(cr, ctx)
	}
	e, p := stageEnv(t, []stageDef{r.stage("first", nil), slow, r.stage("last", nil, always)})
	e.opts.Now = clock.Now
	e.opts.Progress = NewProgress(&buf, false, clock.Now)
	e.opts.Log = e.opts.Progress
	res := e.checkpoint(context.Background(), p, Slot{Name: "cpu0"}, placement{})
	require.Len(t, res.Stages, 3)
	assert.InDelta(t, 1500, res.Stages[1].DurationMS, 0.001, "the row records the stage's own duration")
	assert.Contains(t, buf.String(), "trtmc-qual: p [1/1] · stage last · slow took "+fmtStageDuration(res.Stages[1].DurationMS)+"\n")
	assert.Contains(t, buf.String(), "slow took 1.5s")
	assert.NotRegexp(t, `stage \S+ 0s`, buf.String(), "no stage line says 0s")
	assert.Regexp(t, `· last took <1ms\ntrtmc-qual: p: [A-Z]+`, buf.String(), "the last stage's time, then the verdict")
}

func TestFmtStageDuration(t *testing.T) {
	for ms, want := range map[float64]string{0: "<1ms", 0.9: "<1ms", 1: "1ms", 310.4: "310ms", 999.4: "999ms", 1000: "1.0s", 5060: "5.1s",
		59_940: "59.9s", 130_000: "2m10s"} {
		assert.Equal(t, want, fmtStageDuration(ms), ms)
	}
}

func TestNilProgress(t *testing.T) {
	var p *Progress
	p.plan(1, nil)
	p.begin("a")
	p.stage("a", "server")
	p.requests("a", 1, func() int { return 0 })
	p.stageDone("a", verdict.Stage{Name: "server"})
	p.finished("a")
	p.Tick()
	p.end("a")
	p.run(t.Context(), time.Millisecond)()
	n, err := p.Write([]byte("x\n"))
	assert.Equal(t, 2, n)
	require.NoError(t, err)
	require.NoError(t, p.Close())
}

func TestFmtElapsed(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 1499 * time.Millisecond: "1s", 59 * time.Second: "59s", 130 * time.Second: "2m10s",
		time.Hour + 2*time.Minute + 9*time.Second: "1h02m",
	} {
		assert.Equal(t, want, fmtElapsed(d), d.String())
	}
}

func TestPreviousStages(t *testing.T) {
	out := t.TempDir()
	profiles := []*inventory.Profile{{ID: "done"}, {ID: "broke"}, {ID: "never"}}
	writeResultFile(t, out, "g", "done", verdict.VerdictQualified, []verdict.Stage{{Name: "server", DurationMS: 5}})
	writeResultFile(t, out, "g", "broke", verdict.VerdictError, []verdict.Stage{{Name: "server", DurationMS: 5}})
	prev := previousStages(out, "g", profiles)
	assert.Equal(t, map[string][]verdict.Stage{"done": {{Name: "server", DurationMS: 5}}}, prev,
		"only a finished row's timings predict the next run")
}

func writeResultFile(t *testing.T, out, group, id, v string, stages []verdict.Stage) {
	t.Helper()
	dir := filepath.Join(out, group, id)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	data, err := json.Marshal(verdict.Result{Profile: id, Verdict: v, Stages: stages})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "result.json"), data, 0o644))
}

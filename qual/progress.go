package qual

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// PlainInterval is how often, at most, a running stage prints a progress
// line when stderr is not a terminal (CI logs).
const PlainInterval = 15 * time.Second

// Progress shows what every busy slot is doing while a group runs, fed by
// the pipeline's stage events. It is also the writer the run's log lines
// go through, so progress and logs never share a line:
//
//   - on a terminal, one line per busy checkpoint (profile, stage, elapsed,
//     requests answered/expected, checkpoint k of n, ETA from the previous
//     run's stage timings) is redrawn in place below the log; a log line
//     first clears that block, is written whole, and the block is drawn
//     again under it;
//   - elsewhere, a plain line per stage change and at most every
//     PlainInterval while a stage runs.
//
// Writers sharing it from several goroutines write whole lines (as logf
// does); one writer's line may come in pieces. A nil *Progress does
// nothing; its Write discards.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	now   func() time.Time
	every time.Duration

	total   int
	started int
	busy    []*slotProgress // in start order
	prev    map[string][]verdict.Stage
	// drawn is how many block lines are on the terminal below the log.
	drawn int
	// partial holds a log write that did not end its line yet.
	partial []byte
}

type slotProgress struct {
	profile string
	k       int
	start   time.Time
	stage   string
	since   time.Time
	// answered counts the requests answered so far (nil: not counting).
	answered func() int
	expected int
	// lastPlain is when the last plain line for this slot was printed.
	lastPlain time.Time
	// done are the stages finished since the last stage line, as the
	// pipeline recorded them: the next stage line (or finished) says how
	// long each took.
	done []verdict.Stage
}

// NewProgress writes to w (stderr); tty selects the redrawn block.
func NewProgress(w io.Writer, tty bool, now func() time.Time) *Progress {
	if now == nil {
		now = time.Now
	}
	return &Progress{w: w, tty: tty, now: now, every: PlainInterval, prev: map[string][]verdict.Stage{}}
}

// Write is the log's writer: whole lines go out at once, with the progress
// block cleared first and redrawn after; a trailing partial line waits for
// its end (or Close).
func (p *Progress) Write(b []byte) (int, error) {
	if p == nil {
		return len(b), nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	i := bytes.LastIndexByte(p.partial, '\n')
	if i < 0 {
		return len(b), nil
	}
	lines := p.partial[:i+1]
	p.clear()
	_, err := p.w.Write(lines)
	p.partial = append([]byte(nil), p.partial[i+1:]...)
	p.draw()
	if err != nil {
		return 0, err
	}
	return len(b), nil
}

// Close ends a pending partial line and clears the block.
func (p *Progress) Close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	if len(p.partial) > 0 {
		p.partial = append(p.partial, '\n')
		_, _ = p.w.Write(p.partial)
		p.partial = nil
	}
	return nil
}

// plan records how many checkpoints will run and the previous run's stage
// timings per profile (for the ETA).
func (p *Progress) plan(total int, prev map[string][]verdict.Stage) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = total
	for id, st := range prev {
		p.prev[id] = st
	}
}

// begin marks a checkpoint as started (the k-th of the run).
func (p *Progress) begin(profile string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started++
	now := p.now()
	p.busy = append(p.busy, &slotProgress{profile: profile, k: p.started, start: now, since: now})
}

// stage marks a checkpoint's move to a named stage.
func (p *Progress) stage(profile, name string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.find(profile)
	if s == nil {
		return
	}
	s.stage, s.since, s.answered, s.expected = name, p.now(), nil, 0
	p.endPartial()
	took := doneStages(s)
	if p.tty {
		// The stage change stays in the scrolled log too.
		p.clear()
		fmt.Fprint(p.w, text.Printable(fmt.Sprintf("trtmc-qual: %s: stage %s", profile, name)+took)+"\n")
		p.draw()
		return
	}
	// A stage has just started: the line says how long the stages before
	// it took, not the 0s it has run.
	s.lastPlain = p.now()
	fmt.Fprint(p.w, text.Printable("trtmc-qual: "+p.line(s, true, false)+took)+"\n")
}

// stageDone records a finished stage of a checkpoint as the pipeline
// recorded it (its status and its own duration, verdict.Stage), for the
// next stage line.
func (p *Progress) stageDone(profile string, st verdict.Stage) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.find(profile); s != nil {
		s.done = append(s.done, st)
	}
}

// finished prints how long the checkpoint's last stages took, before its
// verdict is logged.
func (p *Progress) finished(profile string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.find(profile)
	if s == nil || len(s.done) == 0 {
		return
	}
	p.endPartial()
	took := doneStages(s)
	line := fmt.Sprintf("%s [%d/%d]%s", s.profile, s.k, max(p.total, s.k), took)
	if p.tty {
		p.clear()
		line = s.profile + ":" + strings.TrimPrefix(took, " ·")
	}
	fmt.Fprint(p.w, text.Printable("trtmc-qual: "+line)+"\n")
	p.draw()
}

// doneStages is " · preflight took 1.2s · server took 310ms" for the
// stages finished since the last line (then forgotten), "" for none.
func doneStages(s *slotProgress) string {
	var b strings.Builder
	for _, st := range s.done {
		b.WriteString(" · " + st.Name)
		switch st.Status {
		case verdict.StageSkipped:
			b.WriteString(" skipped")
		case verdict.StageError:
			b.WriteString(" failed after " + fmtStageDuration(st.DurationMS))
		case verdict.StageInterrupted:
			b.WriteString(" interrupted after " + fmtStageDuration(st.DurationMS))
		default:
			b.WriteString(" took " + fmtStageDuration(st.DurationMS))
		}
	}
	s.done = nil
	return b.String()
}

// fmtStageDuration is a stage's duration: 310ms under a second, 5.1s under
// a minute, then as fmtElapsed (2m10s).
func fmtStageDuration(ms float64) string {
	switch d := msDuration(ms); {
	case d < time.Millisecond:
		return "<1ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return fmtElapsed(d)
	}
}

// requests counts answered requests of the current stage with count,
// out of expected, until the next stage.
func (p *Progress) requests(profile string, expected int, count func() int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.find(profile); s != nil {
		s.answered, s.expected = count, expected
	}
}

// end removes a finished checkpoint's line.
func (p *Progress) end(profile string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.busy = slices.DeleteFunc(p.busy, func(s *slotProgress) bool { return s.profile == profile })
	if p.tty {
		p.redraw()
	}
}

// Tick redraws the block (terminal) or prints the plain lines that are
// due (every PlainInterval per running stage).
func (p *Progress) Tick() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		p.redraw()
		return
	}
	now := p.now()
	for _, s := range p.busy {
		if s.stage != "" && now.Sub(s.lastPlain) >= p.every {
			p.endPartial()
			p.plainLine(s)
		}
	}
}

// run ticks every interval until ctx ends or the returned stop is called;
// stop clears the block.
func (p *Progress) run(ctx context.Context, interval time.Duration) (stop func()) {
	if p == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				p.Tick()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
			p.mu.Lock()
			p.clear()
			p.mu.Unlock()
		})
	}
}

func (p *Progress) find(profile string) *slotProgress {
	for _, s := range p.busy {
		if s.profile == profile {
			return s
		}
	}
	return nil
}

// clear erases the drawn block; the cursor ends at the start of the line
// where the block began (held p.mu).
func (p *Progress) clear() {
	if !p.tty || p.drawn == 0 {
		return
	}
	fmt.Fprintf(p.w, "\033[%dA\r\033[J", p.drawn)
	p.drawn = 0
}

// draw writes one line per busy checkpoint, each ended by a newline, so
// whatever is written next starts on a line of its own (held p.mu). A
// partial log line pending in p.partial keeps the block off the screen.
func (p *Progress) draw() {
	if !p.tty || len(p.partial) > 0 {
		return
	}
	var b strings.Builder
	for _, s := range p.busy {
		b.WriteString(text.Printable(p.line(s, false, true)))
		b.WriteByte('\n')
	}
	if b.Len() == 0 {
		return
	}
	_, _ = io.WriteString(p.w, b.String())
	p.drawn = len(p.busy)
}

func (p *Progress) redraw() { p.clear(); p.draw() }

// endPartial ends a pending partial log line, so what progress writes next
// starts a line of its own (held p.mu).
func (p *Progress) endPartial() {
	if len(p.partial) == 0 {
		return
	}
	p.clear()
	_, _ = p.w.Write(append(p.partial, '\n'))
	p.partial = nil
}

// plainLine prints one progress line for s, as a log line (held p.mu).
func (p *Progress) plainLine(s *slotProgress) {
	s.lastPlain = p.now()
	fmt.Fprint(p.w, text.Printable("trtmc-qual: "+p.line(s, true, true))+"\n")
}

// line is what one busy checkpoint shows. A plain line (a log line, not
// on a terminal) replaces the "stage NAME" log line, so it says "stage
// NAME" too: what people (and tests) grep CI logs for. elapsed adds the
// time in the stage so far (not on the line that starts it).
func (p *Progress) line(s *slotProgress, plain, elapsed bool) string {
	stage := ""
	if plain {
		stage = "stage "
		if s.stage == "server" {
			stage = "stage server: "
		}
	}
	now := p.now()
	in := now.Sub(s.since)
	parts := []string{fmt.Sprintf("%s [%d/%d]", s.profile, s.k, max(p.total, s.k))}
	in0 := ""
	if elapsed {
		in0 = " " + fmtElapsed(in)
	}
	switch s.stage {
	case "":
		parts = append(parts, "starting "+fmtElapsed(now.Sub(s.start)))
	case "server":
		parts = append(parts, stage+"loading engine…"+in0)
	default:
		parts = append(parts, stage+s.stage+in0)
	}
	if s.answered != nil {
		parts = append(parts, fmt.Sprintf("%d/%d requests answered", s.answered(), s.expected))
	}
	if eta, ok := p.eta(s, now); ok {
		parts = append(parts, "ETA "+fmtElapsed(eta))
	}
	return strings.Join(parts, " · ")
}

// eta is what the previous run of this profile took for the rest of the
// stages: the remainder of the current one plus every later one.
func (p *Progress) eta(s *slotProgress, now time.Time) (time.Duration, bool) {
	prev := p.prev[s.profile]
	if len(prev) == 0 || s.stage == "" {
		return 0, false
	}
	cur := slices.IndexFunc(prev, func(st verdict.Stage) bool { return st.Name == s.stage })
	if cur < 0 {
		return 0, false
	}
	rem := msDuration(prev[cur].DurationMS) - now.Sub(s.since)
	if rem < 0 {
		rem = 0
	}
	for _, st := range prev[cur+1:] {
		rem += msDuration(st.DurationMS)
	}
	return rem, true
}

func msDuration(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// fmtElapsed is 45s, 2m10s, 1h02m.
func fmtElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// previousStages reads the stage timings of each profile's previous
// finished run (result.json in the evidence root), for the ETA.
func previousStages(out, group string, profiles []*inventory.Profile) map[string][]verdict.Stage {
	prev := map[string][]verdict.Stage{}
	for _, pr := range profiles {
		r, err := readResult(resultPath(out, group, pr.ID))
		if err != nil || (r.Verdict != verdict.VerdictQualified && r.Verdict != verdict.VerdictFailed) {
			continue
		}
		prev[pr.ID] = r.Stages
	}
	return prev
}

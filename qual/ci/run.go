package ci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/drift"
	"github.com/trtmc-qual/trtmc-qual/inventory/reconcile"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/reports/markdown"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// The exit statuses of Step.Code, the job's documented contract: their
// values are those of cmd/trtmc-qual/exitcodes.go, the one table (its
// TestCICodesAreTheTable checks that they agree). A step asks for
// CodeFailed or CodeUsage itself; an error's code comes from
// Options.CodeOf; the reports name each (codeType, codeVerdict).
const (
	CodeFailed  = 1 // a check found something
	CodeUsage   = 2 // configuration, inventory or usage error
	CodeSetup   = 3 // setup error: git missing, smoke qualification unavailable
	CodeHarness = 4 // harness error
)

// SmokeFunc runs a smoke qualification of one group and says whether it
// passed, with a one-line summary.
type SmokeFunc func(ctx context.Context, group string) (passed bool, summary string, err error)

// Options are the inputs of the premerge job, resolved by the wiring.
type Options struct {
	Repo        string
	Base        string
	Head        string
	Groups      []string // --group; none: the groups of both the inventory and the spec-groups file
	RunSmoke    bool
	SmokeGroups []string // none: the checked groups
	SpecGroups  string   // the spec-groups file; "" the built-in one
	Inventory   []string
	Families    string
	Now         func() time.Time
	NewGit      func(repo string) gitread.Repo
	// Smoke qualifies a group for RunSmoke; the wiring refuses RunSmoke
	// when it is nil.
	Smoke SmokeFunc
	// CodeOf is an error's exit status, from the wiring's table.
	CodeOf func(error) int
	// Log gets one line per step as it ends.
	Log io.Writer
}

// UsageError is a mistake in what the job was asked to check: a usage
// error (cmd/trtmc-qual's exit-code table, through Options.CodeOf).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Run runs every step of the premerge job and returns the job: validate
// the inventory and the families, then per group reconcile, drift and
// (when asked) a smoke qualification. Every step runs even when an earlier
// one fails; reconcile is skipped when the inventory is invalid. When ctx
// ends, the steps not yet run are left out and the job so far is returned.
func Run(ctx context.Context, opts Options) *Job {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	r := &runner{opts: opts, now: now, job: &Job{Name: "trtmc-qual ci", Repo: opts.Repo, Base: opts.Base, Head: opts.Head, Started: now()}}
	fams, famErr := r.loadFamilies()
	inv := r.validateInventory(fams, famErr)
	r.validateFamilies(fams, famErr)

	// The specs at the base.
	cfg, cfgErr := specs.LoadConfig(opts.SpecGroups)
	var src specs.Source
	var baseSnap *specs.Snapshot
	var baseErr error
	if cfgErr == nil {
		src = specs.Source{Git: opts.NewGit(opts.Repo), Config: cfg, Repo: opts.Repo}
		baseSnap, baseErr = src.Read(ctx, opts.Base)
		if baseSnap != nil {
			r.job.BaseCommit = baseSnap.Commit
		}
		if head, err := src.Git.Commit(ctx, opts.Head); err == nil {
			r.job.HeadCommit = head
		}
	}
	groups, groupErr := checkedGroups(opts.Groups, cfg, inv)
	if cfgErr != nil {
		r.add(r.stepError("spec-groups", cfgErr), now())
	}
	if groupErr != nil {
		r.add(r.stepError("groups", groupErr), now())
	}
	for _, g := range groups {
		if ctx.Err() != nil {
			break
		}
		r.reconcile(g, cfg, cfgErr, baseSnap, baseErr, inv)
	}
	for _, g := range groups {
		if ctx.Err() != nil {
			break
		}
		r.drift(ctx, g, src, cfgErr)
	}
	smokeGroups := opts.SmokeGroups
	if len(smokeGroups) == 0 {
		smokeGroups = groups
	}
	for _, g := range smokeGroups {
		if ctx.Err() != nil {
			break
		}
		r.smoke(ctx, g)
	}
	return r.job
}

// runner holds one run of the job.
type runner struct {
	opts Options
	now  func() time.Time
	job  *Job
	// inventoryOK: the inventory validated, so reconcile can run.
	inventoryOK bool
}

// add records a step that started at start and logs it.
func (r *runner) add(s Step, start time.Time) {
	s.Duration = r.now().Sub(start)
	r.job.Steps = append(r.job.Steps, s)
	msg := s.Message
	if msg == "" {
		msg = "-"
	}
	if r.opts.Log != nil {
		fmt.Fprintf(r.opts.Log, "ci: %s: %s: %s\n", s.Name, s.Status, msg)
	}
}

// stepError turns an error into an error step with its exit status, from
// the wiring's table (a spec-groups file's ConfigError, a bad ref, a git
// that cannot run...).
func (r *runner) stepError(name string, err error) Step {
	return Step{Name: name, Status: StepError, Message: text.Headline(err.Error()), Output: err.Error(), Code: r.opts.CodeOf(err)}
}

func (r *runner) loadFamilies() (*families.Config, error) {
	if r.opts.Families == "" {
		return nil, errors.New("no family configuration: pass --families FILE or set families in the config file")
	}
	return families.Load(r.opts.Families)
}

// validateInventory is the validate-inventory step; it returns the
// inventory when it could be read (valid or not).
func (r *runner) validateInventory(fams *families.Config, famErr error) *inventory.Inventory {
	start := r.now()
	var known func(string) bool
	if fams != nil {
		known = fams.Has
	}
	var inv *inventory.Inventory
	s := Step{Name: "validate-inventory"}
	var probs inventory.Problems
	switch {
	case len(r.opts.Inventory) == 0:
		s.Status, s.Code, s.Message = StepError, CodeUsage, "no inventory: pass --inventory FILE or set inventory in the config file"
	default:
		var err error
		inv, err = inventory.Load(r.opts.Inventory, known)
		switch {
		case errors.As(err, &probs):
			s.Status, s.Code = StepError, CodeUsage
			s.Message = fmt.Sprintf("%d problem(s), first: %s", len(probs), probs[0].String())
			s.Output = probs.Error()
			s.Markdown = markdown.CodeBlock("", probs.Error())
		case err != nil:
			inv = nil
			s.Status, s.Code, s.Message = StepError, CodeUsage, err.Error()
		default:
			r.inventoryOK = true
			n := len(inv.Profiles())
			s.Status, s.Message = StepPassed, fmt.Sprintf("%d group(s), %d profile(s) in %s", len(inv.Groups), n, strings.Join(r.opts.Inventory, ", "))
		}
	}
	if famErr != nil && s.Status == StepPassed {
		// Known-family checks could not run.
		s.Message += " (family names unchecked: the family configuration failed)"
	}
	r.add(s, start)
	return inv
}

// validateFamilies is the validate-families step.
func (r *runner) validateFamilies(fams *families.Config, famErr error) {
	start := r.now()
	s := Step{Name: "validate-families"}
	if famErr != nil {
		s.Status, s.Code, s.Message, s.Output = StepError, CodeUsage, text.Headline(famErr.Error()), famErr.Error()
	} else {
		s.Status, s.Message = StepPassed, fmt.Sprintf("%d family(ies) in %s", len(fams.Names()), r.opts.Families)
	}
	r.add(s, start)
}

// reconcile is the reconcile-<group> step.
func (r *runner) reconcile(g string, cfg *specs.Config, cfgErr error, baseSnap *specs.Snapshot, baseErr error, inv *inventory.Inventory) {
	start := r.now()
	name := "reconcile-" + g
	switch {
	case cfgErr != nil:
		r.add(r.stepError(name, cfgErr), start)
	case baseErr != nil:
		r.add(r.stepError(name, baseErr), start)
	case !r.inventoryOK:
		r.add(Step{Name: name, Status: StepSkipped, Message: "the inventory is invalid (see validate-inventory)"}, start)
	default:
		rep := reconcile.Reconcile(cfg, baseSnap, inv, g)
		s := Step{Name: name, Status: StepPassed, Message: rep.Line()}
		if rep.Summary.NeedAction > 0 {
			s.Status, s.Code = StepFailed, CodeFailed
		}
		var b strings.Builder
		for _, row := range rep.NeedsAction() {
			fmt.Fprintf(&b, "%s\t%s\t%s\n", row.Profile, row.State, row.Detail)
		}
		s.Output = b.String()
		var md bytes.Buffer
		if err := rep.Markdown(&md); err == nil {
			s.Markdown = md.String()
		}
		r.add(s, start)
	}
}

// drift is the drift-<group> step.
func (r *runner) drift(ctx context.Context, g string, src specs.Source, cfgErr error) {
	start := r.now()
	name := "drift-" + g
	if cfgErr != nil {
		r.add(r.stepError(name, cfgErr), start)
		return
	}
	rep, err := drift.Drift(ctx, src, r.opts.Base, r.opts.Head, []string{g})
	if err != nil {
		r.add(r.stepError(name, err), start)
		return
	}
	s := Step{Name: name, Status: StepPassed, Message: rep.Line()}
	if len(rep.Changes) > 0 {
		s.Status, s.Code = StepFailed, CodeFailed
	}
	var b strings.Builder
	for _, c := range rep.Changes {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", c.Status, c.Category, c.Path, c.Summary)
	}
	s.Output = b.String()
	var md bytes.Buffer
	if err := rep.Markdown(&md); err == nil {
		s.Markdown = md.String()
	}
	r.add(s, start)
}

// smoke is the smoke-<group> step.
func (r *runner) smoke(ctx context.Context, g string) {
	start := r.now()
	name := "smoke-" + g
	if !r.opts.RunSmoke {
		r.add(Step{Name: name, Status: StepSkipped, Message: "not asked (--smoke)"}, start)
		return
	}
	passed, summary, err := r.opts.Smoke(ctx, g)
	switch {
	case err != nil && ctx.Err() != nil:
	case err != nil:
		r.add(r.stepError(name, err), start)
	case !passed:
		r.add(Step{Name: name, Status: StepFailed, Code: CodeFailed, Message: summary, Output: summary}, start)
	default:
		r.add(Step{Name: name, Status: StepPassed, Message: summary}, start)
	}
}

// checkedGroups returns the groups to check: the asked ones, or the groups
// both in the inventory and in the spec-groups file (every spec group when
// the inventory could not be read).
func checkedGroups(asked []string, cfg *specs.Config, inv *inventory.Inventory) ([]string, error) {
	if cfg == nil {
		return asked, nil
	}
	if len(asked) > 0 {
		for _, g := range asked {
			if err := text.CheckName(g); err != nil {
				return nil, &UsageError{fmt.Errorf("--group: %w", err)}
			}
			if err := cfg.CheckGroup(g); err != nil {
				return nil, &UsageError{err}
			}
		}
		return asked, nil
	}
	if inv == nil {
		return cfg.GroupNames(), nil
	}
	var out []string
	for _, g := range inv.GroupNames() {
		if _, ok := cfg.Groups[g]; ok {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out, nil
}

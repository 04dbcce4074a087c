package inventory

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

var (
	sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)
	commitHex = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// Validate checks an inventory's semantics and cross-references. Every
// problem is returned; none stops the others being found. The checks are
// named steps, in the order their problems are listed: per group its name
// and workload, then per profile its identity (id, checkpoint, family,
// task, precision), its kind (normal, variant, partial), what it runs on
// (parallelism, hardware, bundle, tokenizer) and its record (status,
// source commit, exclusion, controls).
func Validate(inv *Inventory, knownFamily func(string) bool) Problems {
	v := &validator{ids: map[string]*Profile{}, knownFamily: knownFamily}
	for _, gname := range inv.GroupNames() {
		v.group(gname, inv.Groups[gname])
	}
	return v.probs
}

// validator collects the problems of one Validate call; ids spans groups
// (an id is unique in the whole inventory).
type validator struct {
	probs       Problems
	ids         map[string]*Profile
	knownFamily func(string) bool
}

// addFunc records one problem of a field.
type addFunc func(field, format string, args ...any)

func (v *validator) group(gname string, g *Group) {
	gadd := func(field, format string, args ...any) {
		rel := strings.TrimPrefix(field, ".")
		if shadowed(g.shadow, rel) {
			return
		}
		v.probs = append(v.probs, problem(g.File, lineIn(g.FieldLines, rel, g.Line), "groups."+orUnnamed(gname)+field, format, args...))
	}
	if err := text.CheckName(gname); err != nil {
		gadd("", "group name %s", nameProblem(err))
	}
	checkWorkload(g.Workload, gadd)
	normals := map[string]*Profile{}
	for _, p := range g.Profiles {
		if p.Kind == KindNormal {
			normals[p.ID] = p
		}
	}
	checkpoints := map[string]*Profile{}
	for _, p := range g.Profiles {
		add := func(field, format string, args ...any) {
			if shadowed(p.shadow, field) {
				return
			}
			v.probs = append(v.probs, problem(p.File, lineIn(p.FieldLines, field, p.Line), "profile "+orUnnamed(p.ID)+": "+field, format, args...))
		}
		v.identity(p, add)
		checkKind(p, gname, normals, checkpoints, add)
		checkRuns(p, add)
		checkRecord(p, add)
	}
}

// checkWorkload checks the workload every profile of a group is measured
// with.
func checkWorkload(w Workload, gadd addFunc) {
	typ, known := endpoint.Lookup(w.EndpointType)
	if !known {
		gadd(".workload.endpoint_type", "must be %s, got %+q", endpoint.OneOf(func(n string) string { return fmt.Sprintf("%+q", n) }), w.EndpointType)
	}
	if w.Warmup < 0 {
		gadd(".workload.warmup", "must be >= 0")
	}
	if w.Measured <= 0 {
		gadd(".workload.measured", "must be > 0")
	}
	if w.Concurrency < 1 {
		gadd(".workload.concurrency", "must be >= 1")
	}
	if w.RequestTimeoutS < 0 {
		gadd(".workload.request_timeout_s", "must be >= 0")
	}
	if w.Trials != nil && (*w.Trials < 1 || *w.Trials > MaxTrials) {
		gadd(".workload.trials", "must be between 1 and %d, got %d", MaxTrials, *w.Trials)
	}
	if w.Dataset.Corpus == "" {
		gadd(".workload.dataset.corpus", "missing")
	}
	if w.Dataset.SHA256 != "" && !sha256Hex.MatchString(w.Dataset.SHA256) {
		gadd(".workload.dataset.sha256", "must be 64 lowercase hex characters")
	}
	if known && !typ.TakesGeneration() && len(w.Generation) > 0 {
		gadd(".workload.generation", "%s takes no generation controls", typ.Name())
	}
}

// identity checks what names a profile: its id (unique in the whole
// inventory), checkpoint, family, task and precision.
func (v *validator) identity(p *Profile, add addFunc) {
	switch {
	case p.ID == "":
		add("id", "missing")
	case !text.SafeName(p.ID):
		add("id", "%s", nameProblem(text.CheckName(p.ID)))
	}
	if prev, dup := v.ids[p.ID]; dup && p.ID != "" {
		add("id", "duplicate id (first defined at %s)", prev.Where("id"))
	} else {
		v.ids[p.ID] = p
	}
	if p.Checkpoint == "" {
		add("checkpoint", "missing")
	}
	switch {
	case p.Family == "":
		add("family", "missing")
	case !text.SafeName(p.Family):
		add("family", "%s", nameProblem(text.CheckName(p.Family)))
	case v.knownFamily != nil && !v.knownFamily(p.Family):
		add("family", "unknown family %+q (not in the family configuration)", p.Family)
	}
	if p.Task == "" {
		add("task", "missing")
	}
	if p.Precision == "" {
		add("precision", "missing")
	}
}

// checkKind checks the profile's kind against its group: one normal
// profile per checkpoint, each variant naming a normal profile of the same
// checkpoint (checkpoints collects the group's normal profiles as they come).
func checkKind(p *Profile, gname string, normals, checkpoints map[string]*Profile, add addFunc) {
	switch p.Kind {
	case KindNormal:
		if p.VariantOf != "" {
			add("variant_of", "a normal profile is nobody's variant")
		}
		if prev, dup := checkpoints[p.Checkpoint]; dup && p.Checkpoint != "" {
			add("checkpoint", "second normal profile of %s (first: %s); make one a variant", p.Checkpoint, prev.ID)
		} else {
			checkpoints[p.Checkpoint] = p
		}
	case KindVariant:
		parent, ok := normals[p.VariantOf]
		switch {
		case p.VariantOf == "":
			add("variant_of", "a variant must name its normal profile")
		case !ok:
			add("variant_of", "no normal profile %+q in group %s", p.VariantOf, orUnnamed(gname))
		case parent.Checkpoint != p.Checkpoint && !shadowed(parent.shadow, "checkpoint"):
			// (A parent's misspelled checkpoint is reported once, as its own.)
			add("checkpoint", "variant of %s must have its checkpoint %s", parent.ID, parent.Checkpoint)
		}
	case KindPartial:
	case "":
		add("kind", "missing (normal, variant or partial)")
	default:
		add("kind", "must be normal, variant or partial, got %+q", p.Kind)
	}
}

// checkRuns checks what the profile runs on and with: parallelism,
// hardware scopes, the bundle and its pin, the tokenizer and its pin.
func checkRuns(p *Profile, add addFunc) {
	if p.Parallelism.TP < 0 || p.Parallelism.CP < 0 {
		add("parallelism", "tp and cp must be >= 0")
	}
	for _, h := range p.Hardware {
		if !KnownScope(h) {
			add("hardware", "unknown hardware scope %q (known: %s; docs/gpu.md maps GPU names to scopes)", h, strings.Join(ScopeNames(), ", "))
		}
	}
	if p.Bundle.Path == "" {
		add("bundle.path", "missing")
	}
	switch {
	case p.Bundle.SHA256 == "" && p.Status != StatusPlanned:
		add("bundle.sha256", "missing (only a planned profile may omit it)")
	case p.Bundle.SHA256 != "" && !sha256Hex.MatchString(p.Bundle.SHA256):
		add("bundle.sha256", "must be 64 lowercase hex characters, got %+q", p.Bundle.SHA256)
	}
	if p.Tokenizer.SHA256 != "" && !sha256Hex.MatchString(p.Tokenizer.SHA256) {
		add("tokenizer.sha256", "must be 64 lowercase hex characters, got %q", p.Tokenizer.SHA256)
	}
	if p.Tokenizer.SHA256 != "" && p.Tokenizer.Path == "" {
		add("tokenizer.path", "a pinned tokenizer needs its directory")
	}
}

// checkRecord checks what the inventory records about the profile: its
// status, source commit, exclusion and controls.
func checkRecord(p *Profile, add addFunc) {
	valid := []string{StatusPlanned, StatusImplemented, StatusFamilyValidated, StatusAIPerfQualified}
	if !slices.Contains(valid, p.Status) {
		add("status", "must be one of %s, got %+q", strings.Join(valid, ", "), p.Status)
	}
	if p.SourceCommit != "" && !commitHex.MatchString(p.SourceCommit) {
		add("source_commit", "must be a full 40-character git commit, got %+q", p.SourceCommit)
	}
	if p.Exclusion != nil && strings.TrimSpace(p.Exclusion.Reason) == "" {
		add("exclusion.reason", "an exclusion must carry a reason")
	}
	for _, c := range p.Controls {
		if c == "" {
			add("controls", "empty control name")
		}
	}
}

func problem(file string, line int, field, format string, args ...any) Problem {
	p := Problem{File: file, Line: line, Field: field}
	p.Message = fmt.Sprintf(format, args...)
	return p
}

// lineIn is the line of a field of a group or profile: its own key's, else
// its nearest parent's (bundle.sha256 absent: bundle's), else def.
func lineIn(lines map[string]int, field string, def int) int {
	for f := field; f != ""; {
		if l, ok := lines[f]; ok {
			return l
		}
		i := strings.LastIndex(f, ".")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return def
}

// orUnnamed names a profile in a problem: quoted (every non-ASCII byte
// escaped) when it is not a valid name, so control, bidirectional and
// invisible characters cannot reach a terminal raw.
func orUnnamed(id string) string {
	if id == "" {
		return "<no id>"
	}
	if !text.SafeName(id) {
		return text.Quote(id)
	}
	return id
}

// nameProblem is CheckName's error as a problem message.
func nameProblem(err error) string { return err.Error() }

package specs

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/inventory"
)

// Classification says what a manifest is and which rule decided it.
type Classification struct {
	Kind string `json:"kind"`
	// Rule is a stable id such as "partial.name-l0" or "normal.only-profile".
	Rule string `json:"rule"`
	// Reason explains the rule for this manifest.
	Reason string `json:"reason"`
	// Of is the normal profile with the same checkpoint, for variants and
	// partials ("" when the checkpoint has none).
	Of string `json:"of,omitempty"`
}

// Rule ids.
const (
	RuleOnlyProfile    = "normal.only-profile"
	RuleChosen         = "normal.chosen"
	RulePinned         = "normal.pinned"
	RuleSameCheckpoint = "variant.same-checkpoint"
	// RuleParallel is the older layout's multi-device rule; the newer
	// layout's is "variant.tensor_parallel_size" (or
	// "variant.context_parallel_size", "variant.build.tensor_parallel_size").
	RuleParallel           = "variant.build_args.parallel"
	RuleDistributed        = "variant.distributed_runtime"
	RuleTestcaseCategories = "partial.testcase-category"
)

// Classified is a manifest of a group and its classification.
type Classified struct {
	*Manifest
	Class Classification
}

// Classify classifies every manifest of the group in the snapshot, in
// family then name order. Only listed manifests without problems compete
// for the one normal profile per checkpoint; an unlisted or invalid one is
// classified against them but never displaces them.
func Classify(cfg *Config, snap *Snapshot, group string) []*Classified {
	var all []*Classified
	for _, m := range snap.Manifests {
		if m.Group == group {
			all = append(all, &Classified{Manifest: m})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Dir != all[j].Dir {
			return all[i].Dir < all[j].Dir
		}
		return all[i].Name < all[j].Name
	})
	// 1. Rules that decide on the manifest alone.
	var candidates []*Classified
	for _, c := range all {
		if cl, ok := partialRule(cfg, c.Manifest); ok {
			c.Class = cl
			continue
		}
		if cl, ok := variantRule(cfg, c.Manifest); ok {
			c.Class = cl
			continue
		}
		candidates = append(candidates, c)
	}
	// 2. One normal profile per checkpoint among the eligible candidates.
	normalOf := chooseNormals(cfg, candidates)
	// Unlisted or invalid candidates: classified against the normal ones.
	for _, c := range candidates {
		if eligible(c) {
			continue
		}
		if n, ok := normalOf[c.Checkpoint]; ok {
			c.Class = sameCheckpoint(cfg, c.Manifest, n.Manifest)
			continue
		}
		c.Class = Classification{Kind: inventory.KindNormal, Rule: RuleOnlyProfile,
			Reason: "the only full profile of its checkpoint"}
	}
	// Variants and partials name the normal profile of their checkpoint.
	for _, c := range all {
		if c.Class.Kind == inventory.KindNormal || c.Class.Of != "" {
			continue
		}
		if n, ok := normalOf[c.Checkpoint]; ok {
			c.Class.Of = n.Name
		}
	}
	return all
}

// eligible: a listed manifest without problems, which may be its
// checkpoint's normal profile.
func eligible(c *Classified) bool { return c.Listed && len(c.Problems) == 0 }

// chooseNormals picks one normal profile per checkpoint among the
// eligible candidates (in the order their checkpoints first appear) and
// classifies the others of each checkpoint against it.
func chooseNormals(cfg *Config, candidates []*Classified) map[string]*Classified {
	byCheckpoint := map[string][]*Classified{}
	var order []string
	for _, c := range candidates {
		if !eligible(c) {
			continue
		}
		if _, seen := byCheckpoint[c.Checkpoint]; !seen {
			order = append(order, c.Checkpoint)
		}
		byCheckpoint[c.Checkpoint] = append(byCheckpoint[c.Checkpoint], c)
	}
	normalOf := map[string]*Classified{}
	for _, ckpt := range order {
		normalOf[ckpt] = chooseNormal(cfg, ckpt, byCheckpoint[ckpt])
	}
	return normalOf
}

// chooseNormal classifies the eligible full profiles of one checkpoint:
// the one classify.normal_profiles pins, else the first without a
// variant suffix, then by the shortest name, is normal; the others are
// classified against it.
func chooseNormal(cfg *Config, ckpt string, group []*Classified) *Classified {
	sort.SliceStable(group, func(i, j int) bool {
		vi, vj := cfg.variantName(group[i].Manifest), cfg.variantName(group[j].Manifest)
		if vi != vj {
			return !vi
		}
		if len(group[i].Name) != len(group[j].Name) {
			return len(group[i].Name) < len(group[j].Name)
		}
		return group[i].Name < group[j].Name
	})
	n := group[0]
	pinned := false
	if want, ok := cfg.Classify.NormalProfiles[ckpt]; ok {
		for i, c := range group {
			if c.Name == want {
				n, pinned = c, true
				group[0], group[i] = group[i], group[0]
				break
			}
		}
	}
	if len(group) == 1 {
		n.Class = Classification{Kind: inventory.KindNormal, Rule: RuleOnlyProfile,
			Reason: "the only full profile of its checkpoint"}
		return n
	}
	others := make([]string, 0, len(group)-1)
	for _, o := range group[1:] {
		others = append(others, o.Name)
	}
	n.Class = Classification{Kind: inventory.KindNormal, Rule: RuleChosen,
		Reason: fmt.Sprintf("chosen among %d full profiles of its checkpoint (no variant suffix, then shortest name); others: %s",
			len(group), strings.Join(others, ", "))}
	if pinned {
		n.Class.Rule = RulePinned
		n.Class.Reason = fmt.Sprintf("pinned by classify.normal_profiles among %d full profiles of its checkpoint; others: %s",
			len(group), strings.Join(others, ", "))
	}
	for _, o := range group[1:] {
		o.Class = sameCheckpoint(cfg, o.Manifest, n.Manifest)
	}
	return n
}

// Gap is a checkpoint of the group with no normal profile: only variant or
// partial profiles exist, so it has no full-model coverage to qualify.
type Gap struct {
	Checkpoint string   `json:"checkpoint"`
	Profiles   []string `json:"profiles"`
}

// Gaps lists the checkpoints that have no normal profile.
func Gaps(cs []*Classified) []Gap {
	normal := map[string]bool{}
	for _, c := range cs {
		if c.Class.Kind == inventory.KindNormal && c.Listed && len(c.Problems) == 0 {
			normal[c.Checkpoint] = true
		}
	}
	byCkpt := map[string][]string{}
	for _, c := range cs {
		if !normal[c.Checkpoint] && c.Checkpoint != "" && c.Listed && len(c.Problems) == 0 {
			byCkpt[c.Checkpoint] = append(byCkpt[c.Checkpoint], c.Name)
		}
	}
	gaps := []Gap{}
	for _, k := range slices.Sorted(maps.Keys(byCkpt)) {
		gaps = append(gaps, Gap{Checkpoint: k, Profiles: byCkpt[k]})
	}
	return gaps
}

func partialRule(cfg *Config, m *Manifest) (Classification, bool) {
	tokens := nameTokens(m.Name)
	// A token that is part of the checkpoint's own name is the model's
	// identity (ibm-research/patchtst-etth1-regression-distribution is a
	// regression model), not a mark of a reduced profile.
	ckptTokens := nameTokens(path.Base(m.Checkpoint))
	for _, nt := range cfg.Classify.Partial.NameTokens {
		run := nameTokens(nt.Token)
		if containsRun(tokens, run) && !containsRun(ckptTokens, run) {
			return Classification{Kind: inventory.KindPartial, Rule: "partial." + nt.Rule,
				Reason: fmt.Sprintf("name token %q: %s", nt.Token, nt.Reason)}, true
		}
	}
	for _, p := range cfg.partialCheckpoints {
		if m.Checkpoint != "" && p.re.MatchString(m.Checkpoint) {
			return Classification{Kind: inventory.KindPartial, Rule: "partial." + p.Rule,
				Reason: fmt.Sprintf("checkpoint %s: %s", m.Checkpoint, p.Reason)}, true
		}
	}
	if cats := cfg.Classify.Partial.TestcaseCategories; len(cats) > 0 && len(m.Testcases) > 0 {
		all := true
		for _, tc := range m.Testcases {
			if !slices.Contains(cats, tc.Category) {
				all = false
				break
			}
		}
		if all {
			return Classification{Kind: inventory.KindPartial, Rule: RuleTestcaseCategories,
				Reason: fmt.Sprintf("every testcase has test_category %q", m.Testcases[0].Category)}, true
		}
	}
	return Classification{}, false
}

func variantRule(cfg *Config, m *Manifest) (Classification, bool) {
	v := cfg.Classify.Variant
	for _, key := range v.BuildArgs {
		if key == "parallel" {
			// A multi-device layout, in either layout's spelling
			// (build_args.parallel, tensor_parallel_size...). A single-device
			// one ({mode: single, cp_size: 1}, tensor_parallel_size: 1) is
			// not a variant.
			if m.Parallel.Multi() {
				return Classification{Kind: inventory.KindVariant, Rule: "variant." + m.Parallel.Field,
					Reason: m.Parallel.Field + " " + m.Parallel.String()}, true
			}
			continue
		}
		if !slices.Contains(m.BuildArgs, key) {
			continue
		}
		args := "build_args."
		if m.Layout == LayoutFamilies {
			args = "build."
		}
		return Classification{Kind: inventory.KindVariant, Rule: "variant." + args + key,
			Reason: args + key + " is set"}, true
	}
	for _, key := range v.Keys {
		if val, ok := m.Raw[key]; ok && val != nil {
			reason := key + " is set"
			if key == "quantization" && m.Quantization != "" {
				reason = "quantization " + m.Quantization
			}
			return Classification{Kind: inventory.KindVariant, Rule: "variant." + key, Reason: reason}, true
		}
	}
	if v.DistributedRuntime && m.Distributed {
		return Classification{Kind: inventory.KindVariant, Rule: RuleDistributed,
			Reason: "distributed_runtime.enabled is true"}, true
	}
	return Classification{}, false
}

// sameCheckpoint classifies m as a variant of the normal profile n.
func sameCheckpoint(cfg *Config, m, n *Manifest) Classification {
	var diffs []string
	add := func(field, a, b string) {
		if a != b {
			diffs = append(diffs, fmt.Sprintf("%s %s vs %s", field, OrDash(a), OrDash(b)))
		}
	}
	add("precision", m.EffectivePrecision(cfg), n.EffectivePrecision(cfg))
	add("quantization", m.Quantization, n.Quantization)
	add("parallel", m.Parallel.String(), n.Parallel.String())
	add("build_args", strings.Join(m.BuildArgs, ","), strings.Join(n.BuildArgs, ","))
	add("revision", m.Revision, n.Revision)
	add("runtime_strategy", m.RuntimeStrategy, n.RuntimeStrategy)
	reason := fmt.Sprintf("same checkpoint as %s", n.Name)
	if len(diffs) > 0 {
		reason += "; differs in " + strings.Join(diffs, ", ")
	} else {
		reason += " with the same precision and build settings"
	}
	return Classification{Kind: inventory.KindVariant, Rule: RuleSameCheckpoint, Reason: reason, Of: n.Name}
}

// variantName reports whether a profile's name carries a variant suffix
// (-tp4, -fp8...). A precision suffix naming the profile's own precision
// (qwen3-0.6b-fp16 at fp16) is not one.
func (c *Config) variantName(m *Manifest) bool {
	var kept []string
	own := strings.ToLower(m.EffectivePrecision(c))
	for _, t := range strings.Split(strings.ToLower(m.Name), "-") {
		if t != own {
			kept = append(kept, t)
		}
	}
	name := strings.Join(kept, "-")
	for _, re := range c.variantNames {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

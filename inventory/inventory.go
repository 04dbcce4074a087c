// Package inventory holds the per-checkpoint inventory: which profiles of
// which model group trtmc-qual qualifies, with what workload, and what each
// profile claims (checkpoint, revision, bundle identity, status...).
//
// The inventory is YAML. Loading keeps the line of every field so that every
// validation error names file, line and field.
//
//   - types.go checks every value against the Go types first, each problem
//     once, at its own line; validate.go checks the whole (a workload's
//     endpoint_type against inventory/endpoint's registry, names through
//     text.CheckName);
//   - suggest.go is the one "did you mean" (Suggest, DidYouMean: an optimal
//     string alignment distance);
//   - pins.go is the one rule of each pin (BundleSHA256, TokenizerSHA256,
//     CorpusSHA256 and the paths they are taken from), which the preflight,
//     the re-hashes, doctor and `inventory set --pin` use;
//   - set.go and yamledit.go edit one profile or group in place (`inventory
//     set`): byte for byte at the YAML node positions, the result proven
//     before it is returned; target.go finds the one file that defines the
//     target (DefiningFile) and tells the inventory shipped with the harness
//     (ShippedCheckout), which the --write verbs refuse without --force;
//   - hardware.go is the hardware scope table (nvidia-smi names to scopes).
//
// A profile's snapshot entry is verdict.InventoryEntry (Profile.Entry; its
// digest is the entry's), and its kinds, statuses and parts (Parallelism,
// Bundle, Tokenizer, Exclusion) are reports/verdict's: the types the row
// carries.
package inventory

import (
	"fmt"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Schema is the value of the top-level `schema` key this package reads.
const Schema = "trtmc-qual/inventory/v1"

// Kinds of profile (verdict's: a row and the inventory snapshot carry
// them). Only normal profiles count as models.
const (
	KindNormal  = verdict.KindNormal
	KindVariant = verdict.KindVariant
	KindPartial = verdict.KindPartial
)

// Statuses a profile may claim in the inventory (verdict's).
const (
	StatusPlanned         = verdict.StatusPlanned
	StatusImplemented     = verdict.StatusImplemented
	StatusFamilyValidated = verdict.StatusFamilyValidated
	StatusAIPerfQualified = verdict.StatusAIPerfQualified
)

// Inventory is one or more inventory files merged.
type Inventory struct {
	Schema string            `yaml:"schema" json:"schema"`
	Groups map[string]*Group `yaml:"groups" json:"groups"`
}

// Group is a model group (vlm, detection, ...) and its workload.
type Group struct {
	Name        string     `yaml:"-" json:"name"`
	Description string     `yaml:"description" json:"description,omitempty"`
	Workload    Workload   `yaml:"workload" json:"workload"`
	Profiles    []*Profile `yaml:"profiles" json:"profiles"`

	// File and Line locate the group; FieldLines the line of each of its
	// keys ("workload.measured").
	File       string         `yaml:"-" json:"-"`
	Line       int            `yaml:"-" json:"-"`
	FieldLines map[string]int `yaml:"-" json:"-"`
	// shadow holds the fields a parse problem was reported for.
	shadow map[string]bool
}

// Workload is what every profile of a group is measured with.
type Workload struct {
	// EndpointType is a registered AIPerf endpoint type (inventory/endpoint).
	EndpointType string `yaml:"endpoint_type" json:"endpoint_type"`
	Warmup       int    `yaml:"warmup" json:"warmup"`
	Measured     int    `yaml:"measured" json:"measured"`
	Concurrency  int    `yaml:"concurrency" json:"concurrency"`
	Seed         int    `yaml:"seed" json:"seed"`
	// RequestTimeoutS is AIPerf's per-request timeout in seconds.
	RequestTimeoutS float64 `yaml:"request_timeout_s" json:"request_timeout_s"`
	Dataset         Dataset `yaml:"dataset" json:"dataset"`
	// Generation holds generation controls passed to AIPerf as --extra-inputs
	// (max_tokens, temperature...). Empty for detection.
	Generation map[string]any `yaml:"generation" json:"generation,omitempty"`
	// Trials is how many times each profile's warmup + measured requests
	// are run against its server, each trial complete and joined (1 to
	// MaxTrials; absent: 1). `run --trials` overrides it.
	Trials *int `yaml:"trials" json:"trials,omitempty"`
}

// MaxTrials is the most trials a workload may ask for (AIPerf's own
// --num-profile-runs stops at 10 too).
const MaxTrials = 10

// TrialCount is the number of trials the workload runs.
func (w Workload) TrialCount() int {
	if w.Trials == nil {
		return 1
	}
	return *w.Trials
}

// Dataset names the corpus a group is measured on.
type Dataset struct {
	// Corpus is a directory holding corpus.json and its images, relative to
	// the inventory file unless absolute.
	Corpus string `yaml:"corpus" json:"corpus"`
	// SHA256 optionally pins corpus.json.
	SHA256 string `yaml:"sha256" json:"sha256,omitempty"`
}

// Profile is one checkpoint profile of a group.
type Profile struct {
	ID          string      `yaml:"id" json:"id"`
	Checkpoint  string      `yaml:"checkpoint" json:"checkpoint"`
	Revision    string      `yaml:"revision" json:"revision"`
	Family      string      `yaml:"family" json:"family"`
	Task        string      `yaml:"task" json:"task"`
	Kind        string      `yaml:"kind" json:"kind"`
	VariantOf   string      `yaml:"variant_of" json:"variant_of,omitempty"`
	ModelName   string      `yaml:"model_name" json:"model_name,omitempty"`
	Precision   string      `yaml:"precision" json:"precision"`
	Parallelism Parallelism `yaml:"parallelism" json:"parallelism"`
	Bundle      Bundle      `yaml:"bundle" json:"bundle"`
	// Tokenizer is the profile's offline tokenizer directory for AIPerf
	// chat (the checkpoint's, or the one the bundle exports); its sha256
	// optionally pins tokenizer.json. Empty: the run's --tokenizer.
	Tokenizer Tokenizer  `yaml:"tokenizer" json:"tokenizer,omitempty"`
	Controls  []string   `yaml:"controls" json:"controls"`
	Gaps      []string   `yaml:"gaps" json:"gaps"`
	Hardware  []string   `yaml:"hardware" json:"hardware"`
	Status    string     `yaml:"status" json:"status"`
	Exclusion *Exclusion `yaml:"exclusion" json:"exclusion,omitempty"`
	// SourceCommit is the measurement source: the TRTMC commit the bundle
	// was built from (40 hex characters), when known.
	SourceCommit string `yaml:"source_commit" json:"source_commit,omitempty"`

	// Group is the name of the group the profile belongs to.
	Group string `yaml:"-" json:"group"`
	// File and Line locate the profile; FieldLines the line of each key.
	File       string         `yaml:"-" json:"-"`
	Line       int            `yaml:"-" json:"-"`
	FieldLines map[string]int `yaml:"-" json:"-"`
	// shadow holds the fields a parse problem was reported for.
	shadow map[string]bool
}

// The parts of a profile, the same in the inventory snapshot a row is
// shown for (verdict.InventoryEntry).
type (
	// Parallelism is the profile's tensor/context parallel layout.
	Parallelism = verdict.Parallelism
	// Bundle is the built artifact a profile is served from, and its
	// identity.
	Bundle = verdict.Bundle
	// Tokenizer is a tokenizer directory and, optionally, the sha256 of
	// its tokenizer.json.
	Tokenizer = verdict.Tokenizer
	// Exclusion takes a profile out of a run; it must say why.
	Exclusion = verdict.Exclusion
)

// Counted reports whether the profile counts as a model of its group.
func (p *Profile) Counted() bool { return p.Kind == KindNormal }

// Served is the model name the server is started with (the entry's).
func (p *Profile) Served() string { return p.Entry().Served() }

// Digest is the digest of the profile's entry (verdict.InventoryEntry's
// Digest): the identity of the inventory entry a row was run for
// (provenance.inventory_entry_sha256). The entry read back from
// OUT/<group>/inventory.json, the snapshot the run wrote, has the same.
func (p *Profile) Digest() string { return p.Entry().Digest() }

// Entry is the profile as its group's inventory snapshot holds it: the
// entry a row is run and shown for (its JSON is the profile's).
func (p *Profile) Entry() *verdict.InventoryEntry {
	return &verdict.InventoryEntry{ID: p.ID, Checkpoint: p.Checkpoint, Revision: p.Revision, Family: p.Family, Task: p.Task,
		Kind: p.Kind, VariantOf: p.VariantOf, ModelName: p.ModelName, Precision: p.Precision, Parallelism: p.Parallelism,
		Bundle: p.Bundle, Tokenizer: p.Tokenizer, Controls: p.Controls, Gaps: p.Gaps, Hardware: p.Hardware, Status: p.Status,
		Exclusion: p.Exclusion, SourceCommit: p.SourceCommit, Group: p.Group}
}

// Where returns "file:line" for a field of the profile (or the profile).
func (p *Profile) Where(field string) string {
	if l, ok := p.FieldLines[field]; ok {
		return fmt.Sprintf("%s:%d", p.File, l)
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// GroupNames returns the group names in sorted order.
func (inv *Inventory) GroupNames() []string {
	return sortedKeys(inv.Groups)
}

// Profiles returns every profile of every group, in group then file order.
func (inv *Inventory) Profiles() []*Profile {
	var out []*Profile
	for _, g := range inv.GroupNames() {
		out = append(out, inv.Groups[g].Profiles...)
	}
	return out
}

// Find returns the profile with the given id, in any group.
func (inv *Inventory) Find(id string) (*Profile, bool) {
	for _, p := range inv.Profiles() {
		if p.ID == id {
			return p, true
		}
	}
	return nil, false
}

package verdict

import (
	"encoding/json"
	"fmt"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// Kinds of profile. Only normal profiles count as models.
const (
	KindNormal  = "normal"
	KindVariant = "variant"
	KindPartial = "partial"
)

// Statuses a profile may claim in the inventory.
const (
	StatusPlanned         = "planned"
	StatusImplemented     = "implemented"
	StatusFamilyValidated = "family-validated"
	StatusAIPerfQualified = "aiperf-qualified"
)

// InventoryEntry is one profile of a group's inventory as a run writes it
// into the group's inventory snapshot (OUT/<group>/inventory.json, a JSON
// list of entries) and the evidence loader reads it back: the entry a row
// is run for, and shown for. Its JSON is the inventory's profile's
// (inventory.Profile is this entry plus where it was read, and
// Profile.Entry converts: TestEntryIsTheProfile), so its digest is one
// rule for the run and the loader.
type InventoryEntry struct {
	ID          string      `json:"id"`
	Checkpoint  string      `json:"checkpoint"`
	Revision    string      `json:"revision"`
	Family      string      `json:"family"`
	Task        string      `json:"task"`
	Kind        string      `json:"kind"`
	VariantOf   string      `json:"variant_of,omitempty"`
	ModelName   string      `json:"model_name,omitempty"`
	Precision   string      `json:"precision"`
	Parallelism Parallelism `json:"parallelism"`
	Bundle      Bundle      `json:"bundle"`
	Tokenizer   Tokenizer   `json:"tokenizer,omitempty"`
	Controls    []string    `json:"controls"`
	Gaps        []string    `json:"gaps"`
	Hardware    []string    `json:"hardware"`
	Status      string      `json:"status"`
	Exclusion   *Exclusion  `json:"exclusion,omitempty"`
	// SourceCommit is the measurement source: the TRTMC commit the bundle
	// was built from (40 hex characters), when known.
	SourceCommit string `json:"source_commit,omitempty"`
	// Group is the name of the group the profile belongs to.
	Group string `json:"group"`
}

// Digest is the sha256 of the entry as JSON: the identity of the inventory
// entry a row was run for (provenance.inventory_entry_sha256). An entry
// read back from the snapshot the run wrote has the digest the run
// recorded.
func (e *InventoryEntry) Digest() string {
	b, _ := json.Marshal(e)
	return fileio.SHA256(b)
}

// Served is the model name the server is started with: the entry's
// model_name, else its id.
func (e *InventoryEntry) Served() string {
	if e.ModelName != "" {
		return e.ModelName
	}
	return e.ID
}

// Parallelism is a profile's tensor/context parallel layout.
type Parallelism struct {
	TP int `yaml:"tp" json:"tp"`
	CP int `yaml:"cp" json:"cp,omitempty"`
}

// String renders the layout as "tp1" or "tp4-cp2".
func (p Parallelism) String() string {
	s := fmt.Sprintf("tp%d", max(p.TP, 1))
	if p.CP > 1 {
		s += fmt.Sprintf("-cp%d", p.CP)
	}
	return s
}

// GPUs is the number of GPUs the layout needs: tp x cp (at least 1 each).
func (p Parallelism) GPUs() int { return max(p.TP, 1) * max(p.CP, 1) }

// Bundle is the built artifact a profile is served from, and its identity.
type Bundle struct {
	Path   string `yaml:"path" json:"path"`
	SHA256 string `yaml:"sha256" json:"sha256"`
}

// Tokenizer is a tokenizer directory and, optionally, the sha256 of its
// tokenizer.json.
type Tokenizer struct {
	Path   string `yaml:"path" json:"path,omitempty"`
	SHA256 string `yaml:"sha256" json:"sha256,omitempty"`
}

// Exclusion takes a profile out of a run; it must say why.
type Exclusion struct {
	Reason string `yaml:"reason" json:"reason"`
	Owner  string `yaml:"owner" json:"owner,omitempty"`
	Until  string `yaml:"until" json:"until,omitempty"`
}

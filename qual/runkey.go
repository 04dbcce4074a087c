package qual

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// profileDigest is the sha256 of the inventory entry as JSON.
func profileDigest(p *inventory.Profile) string { return p.Digest() }

// runKey digests every input that could change a result: the inventory
// entry, the group's workload, the family configuration, the bundle, the
// server binary, the AIPerf version and its installed files (RECORD), the
// harness version and the checkouts' state. --resume skips
// a checkpoint only when its finished result carries the same key.
func (cr *checkpointRun) runKey(ctx context.Context) (string, error) {
	o := cr.gr.opts
	bundleSum := cr.profile.Bundle.SHA256
	serverSum := ""
	if cr.family != nil && len(cr.family.Server) > 0 {
		if argv, err := families.Expand(cr.family.Server[:1], cr.vars()); err == nil {
			if s, err := fileio.FileSHA256(ctx, lookBinary(argv[0])); err == nil {
				serverSum = s
			}
		}
	}
	key := map[string]any{
		"inventory_entry": profileDigest(cr.profile),
		"workload":        cr.gr.group.Workload,
		"family":          cr.family,
		"bundle_sha256":   bundleSum,
		"server_sha256":   serverSum,
		"aiperf_version":  cr.gr.aiperf.Got,
		"harness":         o.Provenance.HarnessVersion + "@" + o.Provenance.HarnessCommit,
	}
	// A checkout's uncommitted changes are inputs too: the same commit with
	// another diff is another run (where the checkout sits is not).
	var states []string
	for _, c := range cr.gr.checkouts {
		states = append(states, strings.Join([]string{c.Name, c.Commit, c.DiffSHA256, c.UntrackedSHA256, c.Error}, "|"))
	}
	if len(states) > 0 {
		key["checkouts"] = states
	}
	if d := cr.gr.aiperfDist; d != nil {
		key["aiperf_record_sha256"] = d.RecordSHA256
	}
	b, err := json.Marshal(key)
	if err != nil {
		return "", err
	}
	return fileio.SHA256(b), nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

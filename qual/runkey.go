package qual

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/inventory"
)

// profileDigest is the sha256 of the inventory entry as JSON.
func profileDigest(p *inventory.Profile) string { return p.Digest() }

// runKey digests every input that could change a result: the inventory
// entry, the group's workload, the family configuration, the bundle, the
// server binary, the AIPerf version and the harness version. --resume skips
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

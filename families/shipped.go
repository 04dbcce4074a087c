package families

import (
	"embed"
	"fmt"
	"maps"
	"slices"
)

// shipped are the family configurations that ship with the harness:
// families.yaml (the reference families) and trtmc.yaml (TRTMC's).
//
//go:embed families.yaml trtmc.yaml
var shipped embed.FS

// ShippedFile names the shipped configurations in messages.
const ShippedFile = "the shipped family configuration (families/families.yaml, families/trtmc.yaml)"

// Shipped is the family configuration that ships with the harness (both
// files, checked as Load checks them): what a rejudge judges by when no
// family configuration is named.
func Shipped() (*Config, error) {
	out := &Config{Schema: Schema, Families: map[string]*Family{}, File: ShippedFile}
	for _, name := range []string{"families.yaml", "trtmc.yaml"} {
		data, err := shipped.ReadFile(name)
		if err != nil {
			return nil, err
		}
		cfg, err := Parse("families/"+name, data)
		if err != nil {
			return nil, err
		}
		for _, n := range slices.Sorted(maps.Keys(cfg.Families)) {
			if _, dup := out.Families[n]; dup {
				return nil, fmt.Errorf("families/%s: family %s is also in another shipped configuration", name, n)
			}
			out.Families[n] = cfg.Families[n]
		}
	}
	return out, nil
}

package inventory

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// fill sets every exported field of v to a value that is not its zero,
// recursively: a field added to Profile later is filled too. Unexported
// fields (the loader's bookkeeping, such as the fields a parse problem was
// reported for) are never JSON, so never in the entry: they are left alone.
func fill(t *testing.T, v reflect.Value, name string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("v-" + name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(len(name)))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(t, s.Index(0), name+"[0]")
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, name+".k")
		fill(t, e, name+".v")
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), name)
		v.Set(p)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() {
				fill(t, v.Field(i), name+"."+f.Name)
			}
		}
	default:
		t.Fatalf("%s: fill a %s", name, v.Kind())
	}
}

// TestEntryIsTheProfile: a profile's snapshot entry (verdict.InventoryEntry,
// what the loader reads back) is the profile as JSON, field for field, so
// the entry digest a row records is the one the loader verifies, and it
// is what it was when the digest was the profile's own JSON: every field
// of the profile, now or added later, is in the entry.
func TestEntryIsTheProfile(t *testing.T) {
	var p Profile
	fill(t, reflect.ValueOf(&p).Elem(), "p")
	profileJSON, err := json.Marshal(&p)
	require.NoError(t, err)
	entryJSON, err := json.Marshal(p.Entry())
	require.NoError(t, err)
	assert.Equal(t, string(profileJSON), string(entryJSON), "Profile.Entry must carry every JSON field of Profile, in order")

	var back verdict.InventoryEntry
	require.NoError(t, json.Unmarshal(profileJSON, &back))
	again, err := json.Marshal(&back)
	require.NoError(t, err)
	assert.Equal(t, string(profileJSON), string(again), "the snapshot entry reads the profile's JSON back whole")
	assert.Equal(t, p.Digest(), back.Digest())
	assert.Equal(t, back.Served(), p.Served())
}

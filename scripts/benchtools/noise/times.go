package noise

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// TimesSchema names the file of measured per-request times that fits are
// made from (baseline-noise repeats -save-times, synth -fit-times).
const TimesSchema = "trtmc-qual/bench-times/v1"

// Series is one series of per-request times of a run, in ms, in the order
// the requests started.
type Series struct {
	Name string    `json:"name"`
	MS   []float64 `json:"ms"`
}

type timesFile struct {
	Schema string   `json:"schema"`
	Source string   `json:"source"`
	Series []Series `json:"series"`
}

// WriteTimes writes series to path (atomically), with where and when they
// were measured.
func WriteTimes(path, source string, series []Series) error {
	return fileio.WriteJSON(path, timesFile{Schema: TimesSchema, Source: source, Series: series})
}

// ReadTimes reads a file WriteTimes wrote.
func ReadTimes(ctx context.Context, path string) ([]Series, error) {
	data, err := fileio.ReadFile(ctx, path, 16<<20)
	if err != nil {
		return nil, err
	}
	var f timesFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Schema != TimesSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, f.Schema, TimesSchema)
	}
	for _, s := range f.Series {
		if len(s.MS) == 0 {
			return nil, fmt.Errorf("%s: series %q has no times", path, s.Name)
		}
	}
	return f.Series, nil
}

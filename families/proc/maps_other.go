//go:build !linux

package proc

// MappedFiles is unavailable here (see ErrMapsUnavailable).
func MappedFiles(int) ([]Mapping, error) { return nil, ErrMapsUnavailable }

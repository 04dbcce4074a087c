package aiperf

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// DistInfo is the installed distribution of the aiperf an executable
// runs: its dist-info directory in the executable's virtual environment
// (<venv>/bin/aiperf beside <venv>/lib/python3.*/site-packages), the name
// and version its METADATA states, and the sha256 of METADATA and of
// RECORD (pip's list of every installed file with its own sha256): what
// TRTMC's text_profile.py records of AIPerf beside its version.
type DistInfo struct {
	Dir, Name, Version           string
	MetadataSHA256, RecordSHA256 string
}

// FindDistInfo finds and digests the dist-info of the aiperf that bin (a
// path or a name on PATH) runs. An error says why there is none: not in a
// virtual environment, no or several aiperf dist-info directories, a
// METADATA without name or version.
func FindDistInfo(ctx context.Context, bin string) (*DistInfo, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, err
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, err
	}
	venv := filepath.Dir(filepath.Dir(path))
	var dirs []string
	for _, lib := range []string{"lib", "lib64"} {
		m, _ := filepath.Glob(filepath.Join(venv, lib, "python3*", "site-packages", "aiperf-*.dist-info"))
		for _, d := range m {
			if real, err := filepath.EvalSymlinks(d); err == nil && !contains(dirs, real) {
				dirs = append(dirs, real)
			}
		}
	}
	switch len(dirs) {
	case 0:
		return nil, fmt.Errorf("no aiperf-*.dist-info under %s/lib*/python3*/site-packages (is %s in a virtual environment?)", venv, path)
	case 1:
	default:
		return nil, fmt.Errorf("%d aiperf dist-info directories in %s: %s", len(dirs), venv, strings.Join(dirs, ", "))
	}
	d := &DistInfo{Dir: dirs[0]}
	meta, err := fileio.ReadFile(ctx, filepath.Join(d.Dir, "METADATA"), fileio.MaxDocumentBytes)
	if err != nil {
		return nil, err
	}
	d.MetadataSHA256 = fileio.SHA256(meta)
	sc := bufio.NewScanner(bytes.NewReader(meta))
	for sc.Scan() && sc.Text() != "" { // the headers end at the first blank line
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			switch strings.ToLower(k) {
			case "name":
				d.Name = strings.TrimSpace(v)
			case "version":
				d.Version = strings.TrimSpace(v)
			}
		}
	}
	if d.Name == "" || d.Version == "" {
		return nil, fmt.Errorf("%s/METADATA states no Name or Version", d.Dir)
	}
	if d.RecordSHA256, err = fileio.FileSHA256(ctx, filepath.Join(d.Dir, "RECORD")); err != nil {
		return nil, err
	}
	return d, nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

//go:build linux

package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// MappedFiles lists the files the processes of process group pgid have
// mapped (/proc/PID/maps: executables, shared libraries, mapped data)
// and the programs they run (/proc/PID/exe), each once, sorted by path.
// Pseudo-files (/dev, /proc, /sys, memfd) are left out.
func MappedFiles(pgid int) ([]Mapping, error) {
	return mappedFiles("/proc", pgid)
}

func mappedFiles(procRoot string, pgid int) ([]Mapping, error) {
	pids, err := groupPids(procRoot, pgid)
	if err != nil {
		return nil, err
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("no process of group %d in %s", pgid, procRoot)
	}
	byPath := map[string]*Mapping{}
	add := func(path string, exe bool) {
		path, deleted := strings.CutSuffix(path, " (deleted)")
		if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "/dev/") || strings.HasPrefix(path, "/proc/") ||
			strings.HasPrefix(path, "/sys/") || strings.HasPrefix(path, "/memfd:") {
			return
		}
		m := byPath[path]
		if m == nil {
			m = &Mapping{Path: path}
			byPath[path] = m
		}
		m.Executable = m.Executable || exe
		m.Deleted = m.Deleted || deleted
	}
	read := 0
	for _, pid := range pids {
		if exe, err := os.Readlink(filepath.Join(procRoot, pid, "exe")); err == nil {
			add(exe, true)
		}
		data, err := os.ReadFile(filepath.Join(procRoot, pid, "maps"))
		if err != nil {
			continue // exited meanwhile
		}
		read++
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			// address perms offset dev inode pathname (the path may hold spaces)
			f := strings.SplitN(sc.Text(), " ", 6)
			if len(f) < 6 || f[4] == "0" {
				continue
			}
			add(strings.TrimLeft(f[5], " "), false)
		}
	}
	if read == 0 {
		return nil, fmt.Errorf("the mappings of group %d cannot be read", pgid)
	}
	out := make([]Mapping, 0, len(byPath))
	for _, m := range byPath {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Package fileio is the one home of safe file I/O, a shared leaf (it
// imports nothing of this module, so every layer and the reference target
// may use it):
//
//   - atomic writes (WriteFile, WriteJSON, CreateAtomic: temp file, fsync,
//     rename, fsync of the directory), so a reader sees the old file or the
//     new one, never a torn one, even if the writer is killed mid-write;
//   - safe reads: only regular files (OpenRegular, CheckRegular, CheckDir:
//     never a FIFO or a device), each under a size cap (ReadFile with the
//     Max*Bytes caps, LineReader for JSON Lines), stopping when the context
//     ends; file digests (FileSHA256);
//   - the flock (TryLock) and the locked read-modify-write of a shared file
//     (UpdateFile);
//   - where outputs may go (CheckOutside: no writer inside an evidence
//     tree, links resolved) and private scratch space (PrivateDir,
//     RemoveStale: mode 0700, named after the process; what killed
//     processes left behind is removed).
//
// It lives under reports/ because the files it writes and reads are what
// the reports are made of; reports/evidence builds the seal and redaction
// on it.
package fileio

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically: readers see the old file or the
// new one, never a torn one, even if the harness is killed mid-write.
func WriteFile(path string, data []byte) error { return WriteFileMode(path, data, 0o644) }

// WriteFileMode is WriteFile with the new file's permissions.
func WriteFileMode(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(dir)
}

// WriteJSON writes v as indented JSON, atomically.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return WriteFile(path, append(data, '\n'))
}

// SyncDir fsyncs a directory so a rename in it is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// SHA256 returns the hex sha256 of data.
func SHA256(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// AtomicFile is a file streamed to a temporary name beside path and put in
// its place only by Commit, so readers never see it half-written.
type AtomicFile struct {
	*os.File
	path string
}

// CreateAtomic starts writing path atomically.
func CreateAtomic(path string) (*AtomicFile, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &AtomicFile{File: tmp, path: path}, nil
}

// Commit syncs the file and renames it into place.
func (a *AtomicFile) Commit() error {
	if err := a.Sync(); err != nil {
		a.Abort()
		return fmt.Errorf("write %s: fsync: %w", a.path, err)
	}
	if err := a.Close(); err != nil {
		_ = os.Remove(a.Name())
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if err := os.Chmod(a.Name(), 0o644); err != nil {
		_ = os.Remove(a.Name())
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if err := os.Rename(a.Name(), a.path); err != nil {
		_ = os.Remove(a.Name())
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return SyncDir(filepath.Dir(a.path))
}

// Abort drops the file; a no-op after Commit.
func (a *AtomicFile) Abort() {
	_ = a.Close()
	_ = os.Remove(a.Name())
}

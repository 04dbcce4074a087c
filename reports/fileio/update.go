package fileio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// ChangedError is a file that changed between the moment UpdateFile read
// it and the moment it was to be replaced, by a writer that does not take
// the lock (an editor): nothing was written.
type ChangedError struct{ Path string }

func (e *ChangedError) Error() string {
	return fmt.Sprintf("%s changed while it was being updated (another program wrote it); nothing was written: run the update again", e.Path)
}

// BusyError is a file whose lock another update held past the wait.
type BusyError struct {
	Path string
	Wait time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%s is being updated by another process (its lock was held for more than %s); nothing was written: try again", e.Path, e.Wait)
}

// UpdateFile rewrites a shared file (a docs page several runs update) so
// that no concurrent update is lost: it takes an exclusive flock on the
// file itself (waiting up to wait for another updater), checks that the
// path still names the file it locked (an updater that finished renamed a
// new file over it: then it locks that one), reads it (at most limit
// bytes), calls update with what it read, and when the result differs
// replaces the file atomically (temp file, fsync, rename, keeping its
// permissions) — but first reads the file again and refuses with a
// *ChangedError, writing nothing, if a writer that takes no lock changed
// it meanwhile. The lock is released after the rename, so the next
// updater reads what this one wrote. changed reports whether it wrote.
// An error from update is returned as it is, and nothing is written.
func UpdateFile(ctx context.Context, path string, limit int64, wait time.Duration, update func(old []byte) ([]byte, error)) (changed bool, err error) {
	deadline := time.Now().Add(wait)
	for {
		f, st, err := OpenRegular(path)
		if err != nil {
			return false, err
		}
		locked, err := lockWait(ctx, f, deadline)
		if err != nil {
			f.Close()
			return false, fmt.Errorf("lock %s: %w", path, err)
		}
		if !locked {
			f.Close()
			return false, &BusyError{Path: path, Wait: wait}
		}
		cur, err := os.Stat(path)
		if err != nil || !os.SameFile(st, cur) {
			f.Close() // replaced while we waited: lock the new one
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return false, err
			}
			continue
		}
		changed, err := updateLocked(ctx, f, path, st.Mode().Perm(), limit, update)
		f.Close() // releases the lock, after the rename
		return changed, err
	}
}

func updateLocked(ctx context.Context, f *os.File, path string, perm os.FileMode, limit int64, update func([]byte) ([]byte, error)) (bool, error) {
	old, err := readAllLimit(ctx, f, path, limit)
	if err != nil {
		return false, err
	}
	updated, err := update(old)
	if err != nil {
		return false, err
	}
	if bytes.Equal(updated, old) {
		return false, nil
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(updated); err != nil {
		tmp.Close()
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), perm); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	// Compare and swap: the file is still what update saw.
	now, err := ReadFile(ctx, path, limit)
	if err != nil || !bytes.Equal(now, old) {
		return false, &ChangedError{Path: path}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, SyncDir(dir)
}

func readAllLimit(ctx context.Context, f *os.File, path string, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(NewContextReader(ctx, &limitedFile{f: f, n: limit + 1}))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if n > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return buf.Bytes(), nil
}

type limitedFile struct {
	f *os.File
	n int64
}

func (l *limitedFile) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}

// lockWait takes an exclusive flock on f, polling until deadline (or ctx
// ends); false when the deadline passed.
func lockWait(ctx context.Context, f *os.File, deadline time.Time) (bool, error) {
	for {
		ok, err := TryLock(f)
		if err != nil || ok {
			return ok, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

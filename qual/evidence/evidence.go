// Package evidence writes what a run leaves behind so that it can be
// trusted later: every file atomically (temp file, fsync, rename, fsync of
// the directory), secrets redacted, digests of inputs. It imports nothing
// of the project, so every package that writes files uses it.
package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// FileSHA256 returns the hex sha256 of a file's bytes.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// SHA256 returns the hex sha256 of data.
func SHA256(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// Redactor replaces secret values wherever the harness records text.
type Redactor struct{ secrets []string }

// Mask is what a secret is replaced with.
const Mask = "[REDACTED]"

// NewRedactor redacts the given values (empty and very short ones ignored,
// so redaction never mangles ordinary text).
func NewRedactor(values ...string) *Redactor {
	r := &Redactor{}
	for _, v := range values {
		if len(v) >= 4 {
			r.secrets = append(r.secrets, v)
		}
	}
	return r
}

// String redacts s.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, v, Mask)
	}
	return s
}

// Bytes redacts b.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || len(r.secrets) == 0 {
		return b
	}
	return []byte(r.String(string(b)))
}

// Argv redacts every argument, and the value after flags that carry
// secrets (--api-key X, --api-key=X) whatever it is.
func (r *Redactor) Argv(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		switch {
		case i > 0 && isSecretFlag(argv[i-1]):
			out[i] = Mask
		case strings.Contains(a, "=") && isSecretFlag(a[:strings.Index(a, "=")]):
			out[i] = a[:strings.Index(a, "=")+1] + Mask
		default:
			out[i] = r.String(a)
		}
	}
	return out
}

func isSecretFlag(a string) bool {
	a = strings.ToLower(a)
	return a == "--api-key" || a == "--token" || a == "--password" || strings.HasSuffix(a, "-token") || strings.HasSuffix(a, "-secret")
}

// RedactFile rewrites a file in place with secrets redacted (atomically),
// for children's logs and artifacts that may echo a secret.
func (r *Redactor) RedactFile(path string) error {
	if r == nil || len(r.secrets) == 0 {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	red := r.Bytes(data)
	if string(red) == string(data) {
		return nil
	}
	return WriteFile(path, red)
}

// RedactTree redacts every regular file under dir.
func (r *Redactor) RedactTree(dir string) error {
	if r == nil || len(r.secrets) == 0 {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			return r.RedactFile(p)
		}
		return nil
	})
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

// ShellQuote quotes one word for a POSIX shell: unchanged when it holds
// only characters no shell treats specially, else in single quotes (a
// single quote inside becomes '\”).
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellJoin quotes each word and joins them with spaces: pasted into a
// POSIX shell, it runs exactly argv.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

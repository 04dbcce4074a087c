package qual

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// recordLoaded records, while the server still serves, every file its
// process group has mapped — the server's own program, the native worker
// it started, TRTMC's runtime libraries and every other shared library —
// with its sha256 (server_loaded.json), and names the executables and
// TRTMC's own libraries in the row: what TRTMC's text_profile.py keeps of
// the server binary and its loaded libraries.
func (cr *checkpointRun) recordLoaded(ctx context.Context) {
	lf := &verdict.LoadedFiles{}
	cr.res.Provenance.ServerLoaded = lf
	ms, err := proc.MappedFiles(cr.server.Pid())
	if err != nil {
		lf.Error = err.Error()
		return
	}
	list := verdict.LoadedList{Schema: verdict.LoadedListSchema, Files: []verdict.LoadedPath{}}
	for _, m := range ms {
		f := verdict.LoadedPath{Path: m.Path, Executable: m.Executable, Deleted: m.Deleted}
		if m.Deleted {
			f.Error = "deleted or replaced while mapped: the content that ran cannot be digested"
		} else if f.SHA256, f.Size, err = cr.gr.digests.sum(ctx, m.Path); err != nil {
			f.Error = err.Error()
		}
		list.Files = append(list.Files, f)
		id := verdict.FileIdentity{Path: f.Path, SHA256: f.SHA256}
		base := filepath.Base(m.Path)
		switch {
		case m.Executable:
			lf.Executables = append(lf.Executables, id)
		case strings.HasPrefix(base, "libtrtmc") || strings.HasPrefix(base, "trtmc"):
			lf.Native = append(lf.Native, id)
		}
	}
	lf.Count = len(list.Files)
	path := filepath.Join(cr.dir, verdict.LoadedFile)
	if err := fileio.WriteJSON(path, list); err != nil {
		lf.Error = fmt.Sprintf("write %s: %v", verdict.LoadedFile, err)
		return
	}
	lf.File = verdict.LoadedFile
	lf.SHA256, _ = fileio.FileSHA256(ctx, path)
}

// digestCache keeps the sha256 of files a group run digested, by path,
// size, modification time and inode: the same libraries are mapped by
// every checkpoint's server, and some are gigabytes.
type digestCache struct {
	mu   sync.Mutex
	sums map[string]string
}

func (c *digestCache) sum(ctx context.Context, path string) (string, int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", 0, err
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	key := fmt.Sprintf("%s\x00%d\x00%d\x00%d", path, fi.Size(), fi.ModTime().UnixNano(), ino)
	c.mu.Lock()
	s, ok := c.sums[key]
	c.mu.Unlock()
	if ok {
		return s, fi.Size(), nil
	}
	s, err = fileio.FileSHA256(ctx, path)
	if err != nil {
		return "", fi.Size(), err
	}
	c.mu.Lock()
	if c.sums == nil {
		c.sums = map[string]string{}
	}
	c.sums[key] = s
	c.mu.Unlock()
	return s, fi.Size(), nil
}

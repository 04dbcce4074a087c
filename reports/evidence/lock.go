package evidence

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// LockFile is the name of the lock file in a group's evidence directory
// (OUT/<group>/.lock). It is never removed: a lock is the flock on it,
// which the kernel releases when the holder exits, however it exits.
const LockFile = ".lock"

// Holder describes the run that holds a lock; it is written into the lock
// file once the lock is taken, so a run that finds the lock taken can say
// whose it is.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	Command []string  `json:"command"`
}

// ThisProcess is the Holder of the calling process.
func ThisProcess(now time.Time) Holder {
	host, _ := os.Hostname()
	return Holder{PID: os.Getpid(), Host: host, Started: now.UTC(), Command: os.Args}
}

// Lock is the exclusive hold of one group's evidence directory.
type Lock struct {
	f    *os.File
	path string
}

// LockedError is a group's evidence already locked by another run. Like a
// busy GPU it is a setup error (cmd/trtmc-qual's exit-code table), which
// the same command retried later does not repeat.
type LockedError struct {
	Dir string
	// Holder is the other run, when its lock file could be read.
	Holder *Holder
}

func (e *LockedError) Error() string {
	who := "another trtmc-qual run (its details could not be read)"
	if h := e.Holder; h != nil {
		who = fmt.Sprintf("another trtmc-qual run: pid %d on %s, started %s, command %s", h.PID, h.Host,
			h.Started.Format(time.RFC3339), text.ShellJoin(h.Command))
	}
	return fmt.Sprintf("%s is in use by %s; wait for it to finish, or write to another --out", e.Dir, who)
}

// LockDir takes the exclusive lock of dir (which must exist) for the rest
// of the process's life, or until Unlock. It never waits: when another
// process holds it, the error is a *LockedError naming that process.
func LockDir(dir string, h Holder) (*Lock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	locked, err := fileio.TryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if !locked {
		f.Close()
		return nil, &LockedError{Dir: dir, Holder: readHolder(path)}
	}
	// Written in place, never renamed over: the lock is on this inode.
	data, _ := json.Marshal(h)
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(append(data, '\n'), 0)
	}
	return &Lock{f: f, path: path}, nil
}

// Unlock releases the lock. The file stays (see LockFile).
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	return err
}

func readHolder(path string) *Holder {
	// The holder writes its details right after taking the lock; give it
	// a moment when the file is still empty.
	for i := 0; i < 20; i++ {
		data, err := fileio.ReadFile(context.Background(), path, 1<<20)
		if err == nil && len(data) > 0 {
			var h Holder
			if json.Unmarshal(data, &h) == nil && h.PID > 0 {
				return &h
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

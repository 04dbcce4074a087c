package reports

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Evidence file names under OUT/<group>/.
const (
	ResultFile   = "result.json"
	RejudgedFile = "result.rejudged.json"
	JoinedFile   = "joined.jsonl"
	// MismatchesFile holds, per request whose answers differ, both full
	// canonical answers and the comparator's diff.
	MismatchesFile = "mismatches.jsonl"
	InventoryFile  = "inventory.json"
	// AIPerfArgvFile is relative to a profile's evidence directory.
	AIPerfArgvFile = "aiperf/argv.json"
)

// ErrNoEvidence is wrapped by Load's errors when a result root or its group
// directory does not exist: a usage mistake rather than broken evidence.
var ErrNoEvidence = errors.New("no evidence")

// IsSetAside reports whether a directory name is a previous run set aside
// as "<profile>.<UTC timestamp>", e.g. "ref-vlm-small.20261130T081500Z".
func IsSetAside(name string) bool {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return false
	}
	ts := name[i+1:]
	if len(ts) != len("20061102T150405Z") || ts[8] != 'T' || ts[15] != 'Z' {
		return false
	}
	for j, c := range ts {
		if j != 8 && j != 15 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// LoadOptions change what Load reads.
type LoadOptions struct {
	// Rederive, when set, makes each profile's row from its raw artifacts
	// instead of reading its stored result.json (`report --rejudge`:
	// qual.Rejudge, which checks the seal itself). It is called only for a
	// directory that holds a result.json, in the same walk and with the same
	// filters as the plain load. A file it writes (result.rejudged.json) is
	// never read back: the rows come from the derivation made here and now,
	// not from a file the seal does not cover.
	// entry is the inventory snapshot entry the row is shown for (nil
	// without one): the rejudge takes the served model from it.
	Rederive func(dir, group, profile string, entry *verdict.InventoryEntry) (*verdict.Result, error)
	// NoJoined skips reading joined.jsonl (only the HTML renderer plots
	// it; at a million requests it is large).
	NoJoined bool
}

// Load reads a group's evidence from one or more result roots (OUT
// directories) and builds its report. See LoadWith.
func Load(roots []string, group string) (*GroupReport, error) {
	return LoadWith(roots, group, LoadOptions{})
}

type candidate struct {
	root string
	dir  string // the profile's evidence directory
	res  *verdict.Result
}

// LoadWith reads OUT/<group>/<profile>/result.json of every root (previous
// runs set aside as <profile>.<timestamp>/ are ignored) and the inventory
// snapshot OUT/<group>/inventory.json. When a profile has results in several
// roots the one that ended last wins (the first root on a tie) and a
// different run key or verdict in another root is reported as a conflict.
// Malformed evidence is an *EvidenceError naming the file and, where
// possible, line and field.
func LoadWith(roots []string, group string, opts LoadOptions) (*GroupReport, error) {
	if len(roots) == 0 {
		return nil, errors.New("load evidence: no result root given")
	}
	if err := text.CheckName(group); err != nil {
		return nil, fmt.Errorf("load evidence: group %w", err)
	}
	l := &loader{group: group, opts: opts, cands: map[string][]candidate{}, inv: map[string]*verdict.InventoryEntry{}, invRoot: map[string]string{},
		g: &GroupReport{Schema: GroupReportSchema, Group: group, Rows: []Row{}, Conflicts: []Conflict{}, Notes: []string{}}}
	for _, root := range roots {
		if err := l.root(root); err != nil {
			return nil, err
		}
	}
	if !l.g.Coverage.InventorySnapshot {
		l.g.Notes = append(l.g.Notes, fmt.Sprintf("no inventory snapshot (%s/%s) in the evidence: only profiles with results are listed, and coverage cannot show planned profiles that never ran", group, InventoryFile))
	}
	if err := l.rows(); err != nil {
		return nil, err
	}
	l.sealSnapshots()
	l.g.summarize()
	return l.g, nil
}

// loader is one LoadWith: the report it builds, each profile's candidate
// rows from every root, and the merged inventory snapshot.
type loader struct {
	group   string
	opts    LoadOptions
	g       *GroupReport
	cands   map[string][]candidate
	inv     map[string]*verdict.InventoryEntry
	invRoot map[string]string // the root whose snapshot gave inv[id]
	// snaps are the roots that hold a snapshot, with its file's sha256.
	snaps []rootSnapshot
}

// rootSnapshot is one root's inventory snapshot: where it is and the
// sha256 of its bytes.
type rootSnapshot struct {
	root, path, sha string
}

// root reads one result root: its group directory (which must exist), its
// inventory snapshot, and a candidate row for each profile directory.
func (l *loader) root(root string) error {
	if abs, err := filepath.Abs(root); err == nil {
		l.g.loadRoots = append(l.g.loadRoots, abs) // $OUT in published text
	}
	gdir := filepath.Join(root, l.group)
	st, err := os.Stat(gdir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w for group %q under %s (no directory %s)", ErrNoEvidence, l.group, root, gdir)
	}
	if err != nil {
		return fmt.Errorf("load evidence: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%w for group %q under %s (%s is not a directory)", ErrNoEvidence, l.group, root, gdir)
	}
	if err := l.snapshot(root, gdir); err != nil {
		return err
	}
	entries, err := os.ReadDir(gdir)
	if err != nil {
		return fmt.Errorf("load evidence: %w", err)
	}
	for _, e := range entries {
		if err := l.entry(root, gdir, e); err != nil {
			return err
		}
	}
	return nil
}

// snapshot merges the root's inventory snapshot: the first root's profile
// is used, and a later one that differs is a note.
func (l *loader) snapshot(root, gdir string) error {
	path := filepath.Join(gdir, InventoryFile)
	profiles, sha, found, err := readInventorySnapshot(path, l.group)
	if err != nil {
		return err
	}
	if found {
		l.g.Coverage.InventorySnapshot = true
		l.snaps = append(l.snaps, rootSnapshot{root: root, path: path, sha: sha})
	}
	for _, p := range profiles {
		if prev, ok := l.inv[p.ID]; ok {
			if !sameJSON(prev, p) {
				l.g.Notes = append(l.g.Notes, fmt.Sprintf("inventory snapshots of %s and %s differ on profile %s; the first is used", l.invRoot[p.ID], root, p.ID))
			}
			continue
		}
		l.inv[p.ID], l.invRoot[p.ID] = p, root
	}
	return nil
}

// entry reads one entry of a group directory: a previous run set aside is
// skipped, a link where a profile's directory belongs is an error row
// (never followed), a directory no valid id names is a note, and a
// profile's directory is a candidate row.
func (l *loader) entry(root, gdir string, e fs.DirEntry) error {
	if IsSetAside(e.Name()) {
		return nil
	}
	if !e.IsDir() {
		// A link where a profile's directory belongs is not evidence
		// the harness wrote: an error row, never skipped, never
		// followed.
		if e.Type()&fs.ModeSymlink != 0 && text.SafeName(e.Name()) {
			if st, err := os.Stat(filepath.Join(gdir, e.Name())); err == nil && st.IsDir() {
				res := verdict.BrokenResult(l.group, e.Name(), verdict.CodeEvidenceMalformed, fmt.Sprintf("%s is a symbolic link, not an evidence directory a run wrote; it is not followed",
					filepath.Join(gdir, e.Name())))
				l.cands[e.Name()] = append(l.cands[e.Name()], candidate{root: root, dir: filepath.Join(gdir, e.Name()), res: res})
			}
		}
		return nil
	}
	if !text.SafeName(e.Name()) {
		// Not a directory the harness writes: no valid id names it.
		l.g.Notes = append(l.g.Notes, fmt.Sprintf("%s: directory %v; not a profile's evidence, ignored", gdir, text.CheckName(e.Name())))
		return nil
	}
	dir := filepath.Join(gdir, e.Name())
	res, err := loadRow(dir, l.group, e.Name(), l.inv[e.Name()], l.opts.Rederive)
	if err != nil {
		return err
	}
	l.cands[e.Name()] = append(l.cands[e.Name()], candidate{root: root, dir: dir, res: res})
	return nil
}

// rows builds one row per profile of the snapshot or the evidence, in id
// order: the candidate that ended last wins, a disagreeing other is a
// conflict, and a row's notes become the report's.
func (l *loader) rows() error {
	// Checkouts that are not their commit, each said once with its rows.
	var checkouts []string
	checkoutRows := map[string][]string{}
	ids := map[string]bool{}
	for id := range l.inv {
		ids[id] = true
	}
	for id := range l.cands {
		ids[id] = true
	}
	for _, id := range sortedKeys(ids) {
		p := l.inv[id]
		var win *candidate
		if cs := l.cands[id]; len(cs) > 0 {
			w := pickLatest(cs)
			win = &cs[w]
			if c, ok := conflictOf(id, cs, w); ok {
				l.g.Conflicts = append(l.g.Conflicts, c)
			}
		}
		row, err := buildRow(l.group, id, p, win, !l.opts.NoJoined)
		if err != nil {
			return err
		}
		if l.g.Coverage.InventorySnapshot && p == nil {
			row.Note = joinNote(row.Note, "not in the inventory snapshot")
		}
		if p != nil && row.Result != nil {
			row.bound = bindRow(row.Result, p, filepath.Join(l.invRoot[id], l.group, InventoryFile))
			row.Status, row.Note = statusFor(p, row.Result)
			row.Verdict = row.Result.Verdict
		}
		if win != nil {
			for _, sn := range l.snaps {
				if sn.root == win.root && win.res.Provenance.InventorySnapshotSHA256 == sn.sha {
					row.holdsSnapshot = true
				}
			}
		}
		l.g.Rows = append(l.g.Rows, row)
		if row.Result != nil {
			for _, n := range row.Result.Notes {
				l.g.Notes = append(l.g.Notes, id+": "+n)
			}
			for _, n := range CheckoutNotes(row.Result.Provenance.Checkouts) {
				if !slices.Contains(checkouts, n) {
					checkouts = append(checkouts, n)
				}
				checkoutRows[n] = append(checkoutRows[n], id)
			}
		}
	}
	for _, n := range checkouts {
		l.g.Notes = append(l.g.Notes, fmt.Sprintf("%s (%s)", n, strings.Join(checkoutRows[n], ", ")))
	}
	return nil
}

// bindRow holds a row to the inventory snapshot entry it is shown for
// (merged roots included: the entry is the first root's that has the id):
// the row must have been run for exactly that entry — its recorded entry
// digest is the entry's, and the bundle it was pinned to is the one the
// entry pins. A row that was not becomes an error row
// (inventory_unbound), never qualified for an entry it was not run for.
// A row that records no entry (an error row of evidence that cannot be
// read) is left as it is. It reports whether the row is bound.
func bindRow(r *verdict.Result, p *verdict.InventoryEntry, snapshot string) bool {
	pin := r.Provenance.InventoryEntrySHA256
	if pin == "" && r.Verdict != verdict.VerdictQualified {
		return false
	}
	var why []string
	if want := p.Digest(); pin != want {
		why = append(why, fmt.Sprintf("it records inventory entry %s, the snapshot's entry is %s", orMissing(short(pin)), short(want)))
	}
	if got := r.Provenance.BundlePinnedSHA256; got != p.Bundle.SHA256 {
		why = append(why, fmt.Sprintf("it was run for bundle %s, the snapshot's entry pins %s", orMissing(short(got)), orMissing(short(p.Bundle.SHA256))))
	}
	if len(why) == 0 {
		return true
	}
	r.Problems = append(r.Problems, verdict.Problem{Stage: "evidence", Code: verdict.CodeInventoryUnbound,
		Message: fmt.Sprintf("the row was not run for the inventory entry it is shown for (%s, profile %s): %s", snapshot, p.ID, strings.Join(why, "; "))})
	verdict.Judge(r)
	return false
}

// sealSnapshots checks that each root's inventory snapshot is the one its
// latest run wrote: the snapshot's sha256 must be what the latest row of
// the root with intact evidence records (provenance.inventory_snapshot_sha256).
// A snapshot edited since, or one no row records, is not sealed, and a
// note says why; Coverage.InventorySnapshotSealed is set when every
// snapshot is.
func (l *loader) sealSnapshots() {
	sealed := len(l.snaps) > 0
	for _, sn := range l.snaps {
		// The latest row that records a snapshot; among rows that ended
		// at the same time, one that records this snapshot.
		var latest *verdict.Result
		for _, id := range sortedKeys(l.cands) {
			for _, c := range l.cands[id] {
				r := c.res
				if c.root != sn.root || r.Provenance.InventorySnapshotSHA256 == "" || !r.EvidenceIntact() {
					continue
				}
				if latest == nil || r.EndedAt.After(latest.EndedAt) ||
					r.EndedAt.Equal(latest.EndedAt) && r.Provenance.InventorySnapshotSHA256 == sn.sha {
					latest = r
				}
			}
		}
		switch {
		case latest == nil:
			sealed = false
			l.g.Notes = append(l.g.Notes, fmt.Sprintf("the inventory snapshot %s is not sealed: no row of %s with intact evidence records the snapshot its run wrote (rows of an earlier version record none)", sn.path, sn.root))
		case latest.Provenance.InventorySnapshotSHA256 != sn.sha:
			sealed = false
			l.g.Notes = append(l.g.Notes, fmt.Sprintf("the inventory snapshot %s is not the one the latest run wrote: its sha256 is %s, the latest row (%s, ended %s) records %s",
				sn.path, short(sn.sha), latest.Profile, latest.EndedAt.UTC().Format(time.RFC3339), short(latest.Provenance.InventorySnapshotSHA256)))
		}
	}
	l.g.Coverage.InventorySnapshotSealed = sealed
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// pickLatest returns the index of the candidate that ended last; the
// earliest root wins a tie.
func pickLatest(cs []candidate) int {
	w := 0
	for i := 1; i < len(cs); i++ {
		if cs[i].res.EndedAt.After(cs[w].res.EndedAt) {
			w = i
		}
	}
	return w
}

func conflictOf(id string, cs []candidate, w int) (Conflict, bool) {
	side := func(c candidate) ConflictSide {
		return ConflictSide{Root: c.root, RunKey: c.res.RunKey, Verdict: c.res.Verdict, EndedAt: c.res.EndedAt}
	}
	c := Conflict{Profile: id, Kept: side(cs[w])}
	for i, o := range cs {
		if i == w {
			continue
		}
		if o.res.RunKey != cs[w].res.RunKey || o.res.Verdict != cs[w].res.Verdict {
			c.Others = append(c.Others, side(o))
		}
	}
	return c, len(c.Others) > 0
}

func buildRow(group, id string, p *verdict.InventoryEntry, win *candidate, withJoined bool) (Row, error) {
	row := Row{Profile: id}
	if p != nil {
		row.Kind, row.VariantOf, row.Checkpoint, row.Family = p.Kind, p.VariantOf, p.Checkpoint, p.Family
		row.Precision, row.Parallelism = p.Precision, p.Parallelism.String()
		row.InventoryStatus, row.BundleSHA256 = p.Status, p.Bundle.SHA256
		row.Gaps = p.Gaps
	}
	var res *verdict.Result
	if win != nil {
		res = win.res
		r := res
		row.Kind = cmp.Or(r.Kind, row.Kind)
		row.VariantOf = cmp.Or(r.VariantOf, row.VariantOf)
		row.Checkpoint = cmp.Or(r.Checkpoint, row.Checkpoint)
		row.Family = cmp.Or(r.Family, row.Family)
		row.Precision = cmp.Or(r.Precision, row.Precision)
		row.Parallelism = cmp.Or(r.Parallelism, row.Parallelism)
		row.BundleSHA256 = cmp.Or(r.Provenance.BundleSHA256, row.BundleSHA256)
		row.Result = r
		row.Evidence = filepath.ToSlash(filepath.Join(group, id))
		row.dir, row.files = win.dir, presentEvidence(win.dir)
		// Malformed per-row evidence makes the row an error, naming it.
		malformed := func(err error) error {
			var ee *verdict.EvidenceError
			if !errors.As(err, &ee) {
				return err
			}
			r.Problems = append(r.Problems, verdict.Problem{Stage: "evidence", Code: verdict.CodeEvidenceMalformed, Message: ee.Error()})
			verdict.Judge(r)
			return nil
		}
		argv, err := readAIPerfArgv(win.dir, r)
		if err != nil {
			if err := malformed(err); err != nil {
				return row, err
			}
		}
		row.Reproduce = &Reproduce{Command: ReproduceCommand(r), AIPerfArgv: argv}
		var joined []verdict.JoinedLine
		if withJoined {
			joined, err = verdict.ReadJoined(filepath.Join(win.dir, JoinedFile))
			if err != nil {
				if err := malformed(err); err != nil {
					return row, err
				}
			}
		}
		row.joined = joined
		if joined == nil {
			row.joinedNote = "no " + JoinedFile + " in the evidence"
		}
		row.mismatches = readSealedMismatches(win.dir, shownMismatchIDs(joined))
	}
	if row.Kind == "" {
		row.Kind = verdict.KindNormal
	}
	row.Counted = row.Kind == verdict.KindNormal
	row.Status, row.Note = statusFor(p, res)
	row.Verdict = row.Status
	if res != nil {
		row.Verdict = res.Verdict
	}
	return row, nil
}

// loadRow is one profile directory's row for LoadWith: re-derived when
// asked, else read and checked by ReadRow; a directory without result.json
// is an error row (result_missing), never skipped.
func loadRow(dir, group, profile string, entry *verdict.InventoryEntry, rederive func(dir, group, profile string, entry *verdict.InventoryEntry) (*verdict.Result, error)) (*verdict.Result, error) {
	missing := func() *verdict.Result {
		return verdict.BrokenResult(group, profile, verdict.CodeResultMissing, fmt.Sprintf("%s has no %s: a run that did not finish (or is still running), "+
			"or a result that was moved or removed; nothing in the directory is shown", dir, ResultFile))
	}
	if _, err := os.Lstat(filepath.Join(dir, ResultFile)); errors.Is(err, fs.ErrNotExist) {
		return missing(), nil
	}
	if rederive != nil {
		return rederive(dir, group, profile, entry)
	}
	r, err := ReadRow(dir, group, profile)
	if err == nil && r == nil {
		r = missing()
	}
	return r, err
}

// ReadRow reads a profile's row from its evidence directory the one way
// every verdict and every figure is shown — report, --baseline, status,
// the Slurm driver, --resume: result.json decoded and checked against the
// directory (group and profile), the directory checked against the seal
// its run wrote (manifest.json), and the verdict re-derived by Judge from
// the row's facts. A result.json that is malformed, or that is not a
// regular file under its cap, is an error row naming it
// (evidence_malformed); evidence that differs from its seal adds
// evidence_changed; evidence sealed with the retired sha256-tree-1mib
// adds seal_legacy: such a row is never trusted as it is stored, only
// re-judged (`report --rejudge`). (nil, nil) when the directory holds no
// result.json. The error is for I/O failures, never for the evidence's
// content.
func ReadRow(dir, group, profile string) (*verdict.Result, error) {
	path := filepath.Join(dir, ResultFile)
	data, err := readEvidence(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var r *verdict.Result
	if err == nil {
		r, err = verdict.DecodeResult(path, data, group, profile)
	}
	var ee *verdict.EvidenceError
	switch {
	case errors.As(err, &ee):
		// Malformed evidence is the row's problem, not the report's: an
		// error row that names file, line and field.
		r = verdict.BrokenResult(group, profile, verdict.CodeEvidenceMalformed, ee.Error())
	case err != nil:
		return nil, err
	}
	CheckSeal(r, dir, evidence.Digests{})
	if m, f := evidence.ReadManifest(dir); f == nil && evidence.Retired(m.Algorithm) {
		r.Problems = append(r.Problems, verdict.Problem{Stage: "evidence", Code: verdict.CodeSealLegacy, Message: fmt.Sprintf(
			"the evidence is sealed with the retired %s (a seal anyone can recompute with a few lines of hashlib): its stored verdict and figures are not trusted as they are; `report --rejudge` re-derives them from the raw artifacts, by the family configuration's criteria", m.Algorithm)})
		verdict.Judge(r)
	}
	return r, nil
}

// CheckSeal verifies a row's evidence directory against the manifest the
// run sealed (known: digests already computed, see evidence.VerifySeal),
// records an evidence_changed problem for anything missing, added or
// changed, and re-judges the row. It returns the findings.
func CheckSeal(r *verdict.Result, dir string, known evidence.Digests) []evidence.Finding {
	fs := evidence.VerifySeal(dir, known)
	if len(fs) > 0 {
		parts := make([]string, 0, len(fs))
		for i, f := range fs {
			if i == 5 {
				parts = append(parts, fmt.Sprintf("and %d more", len(fs)-5))
				break
			}
			parts = append(parts, f.String())
		}
		r.Problems = append(r.Problems, verdict.Problem{Stage: "evidence", Code: verdict.CodeEvidenceChanged,
			Message: "the evidence differs from what the run sealed in " + evidence.ManifestFile + ": " + strings.Join(parts, "; ")})
	}
	verdict.Judge(r)
	return fs
}

// SnapshotPins are what a row records of an inventory snapshot's bytes:
// the snapshot's sha256 and each entry's digest, by profile id (what
// export records in the rows of a pack, whose snapshot it scrubbed).
func SnapshotPins(data []byte) (snapshot string, entries map[string]string, err error) {
	var profiles []*verdict.InventoryEntry
	if err := json.Unmarshal(data, &profiles); err != nil {
		return "", nil, err
	}
	entries = map[string]string{}
	for _, p := range profiles {
		if p != nil {
			entries[p.ID] = p.Digest()
		}
	}
	return fileio.SHA256(data), entries, nil
}

// readInventorySnapshot reads OUT/<group>/inventory.json, a JSON list of
// inventory profiles, and the sha256 of its bytes; found is false when the
// file does not exist.
func readInventorySnapshot(path, group string) (profiles []*verdict.InventoryEntry, sha string, found bool, err error) {
	data, err := readEvidence(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, err
	}
	if err := json.Unmarshal(data, &profiles); err != nil {
		return nil, "", true, verdict.DecodeError(path, data, err)
	}
	var out []*verdict.InventoryEntry
	for i, p := range profiles {
		if p == nil || p.ID == "" {
			return nil, "", true, &verdict.EvidenceError{File: path, Field: fmt.Sprintf("[%d].id", i), Err: errors.New("is missing")}
		}
		if err := text.CheckName(p.ID); err != nil {
			return nil, "", true, &verdict.EvidenceError{File: path, Field: fmt.Sprintf("[%d].id", i), Err: err}
		}
		if p.Group != "" && p.Group != group {
			continue
		}
		out = append(out, p)
	}
	return out, fileio.SHA256(data), true, nil
}

// readAIPerfArgv returns the recorded AIPerf argv: aiperf/argv.json when
// present, else the "aiperf" command of the result's provenance.
func readAIPerfArgv(dir string, r *verdict.Result) ([]string, error) {
	path := filepath.Join(dir, filepath.FromSlash(AIPerfArgvFile))
	data, err := readEvidence(path)
	if err == nil {
		var argv []string
		if err := json.Unmarshal(data, &argv); err != nil {
			return nil, &verdict.EvidenceError{File: path, Err: fmt.Errorf("want a JSON list of strings: %w", err)}
		}
		return argv, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, c := range r.Provenance.Commands {
		if c.Stage == "aiperf" {
			return slices.Clone(c.Argv), nil
		}
	}
	return nil, nil
}

// readEvidence reads one JSON document of the evidence: a regular file of
// at most fileio.MaxDocumentBytes. A FIFO, a device (or a link to one)
// or an oversized file is malformed evidence (*EvidenceError naming it),
// refused before it can hang the report or exhaust memory; a missing file
// is fs.ErrNotExist for the caller to decide.
func readEvidence(path string) ([]byte, error) {
	data, err := fileio.ReadFile(context.Background(), path, fileio.MaxDocumentBytes)
	switch {
	case err == nil:
		return data, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case errors.Is(err, fileio.ErrNotRegular) || errors.Is(err, fileio.ErrTooLarge):
		return nil, &verdict.EvidenceError{File: path, Err: errors.New(fileio.ReadProblem("it", path, err))}
	}
	return nil, fmt.Errorf("load evidence: %w", err)
}

func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

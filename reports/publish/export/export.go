// Package export writes a group's public evidence pack (`trtmc-qual
// export`): every file a re-judge needs, with the run host's paths mapped
// to named roots and its host and user names removed, sealed again over
// what it holds, scanned before anything is written for what must not
// leave the host, and refused — naming file and line — when anything
// remains. `tar xzf PACK -C DIR && trtmc-qual report --from DIR/PACK
// --group G --rejudge` re-derives the same verdicts and figures
// elsewhere.
//
// How scrubbing and the join fit together: the files the join reads
// (JoinInputs: the dataset, AIPerf's records and raw exports, the
// server's records, the native answers) are published byte for byte,
// never scrubbed, so a re-judge joins exactly what the run joined; they
// are scanned like everything else, and anything private in them refuses
// the pack. Every other file is mapped line by line by the report's
// publish.Scrubber (paths, hosts, users, IPs; nothing else changes, and
// JSON stays valid or the pack is refused); logs are left out by default.
// Each row directory gets a new manifest.json sealing what the pack holds,
// which records the original seal it came from and what was done to each
// file; PACK.json (schema trtmc-qual/evidence-pack/v1) indexes the rows.
// The pack's tables and summary are rendered from the pack itself, and
// everything is scanned for paths, hosts, users, IPs, secrets and
// credentials before anything is written (LeakError names file and line).
package export

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// IndexSchema is the schema id of PACK.json.
const IndexSchema = "trtmc-qual/evidence-pack/v1"

// IndexFile is the pack's index, at the pack's root.
const IndexFile = "PACK.json"

// SummaryFile is the completion summary, at the pack's root.
const SummaryFile = "summary.md"

// How logs are published.
const (
	LogsNone = "none" // left out (the default: what the seeds publish)
	LogsTail = "tail" // the last LogTail lines, scrubbed
	LogsFull = "full" // whole, scrubbed
)

// DefaultLogTail is how many lines --logs tail keeps.
const DefaultLogTail = 100

// What was done to a file.
const (
	ActionVerbatim = "verbatim" // a join input, byte for byte
	ActionScrubbed = "scrubbed" // mapped by the scrubber (possibly unchanged)
	ActionTail     = "tail"     // a log cut to its last lines, scrubbed
	ActionOmitted  = "omitted"  // left out
	ActionRendered = "rendered" // written by export (tables, summary)
)

// JoinInputs are the files of a checkpoint's evidence the join reads
// (qual/streamjoin.CheckpointFiles; a test keeps the two equal). They are
// published byte for byte.
func JoinInputs() []string {
	return []string{"dataset.jsonl", "aiperf/profile_export.jsonl", "aiperf/profile_export_raw.jsonl",
		"server_records.jsonl", "native_answers.jsonl"}
}

// Options configure Export.
type Options struct {
	// Roots are the result roots (OUT directories), merged as report does.
	Roots []string
	Group string
	// Output is the pack to write (PACK.tar.gz or PACK.tgz); it must not
	// exist. Its base name without the extension is the pack's top
	// directory.
	Output string
	// Logs is LogsNone (default), LogsTail or LogsFull; LogTail the lines
	// kept by LogsTail (default DefaultLogTail).
	Logs    string
	LogTail int
	// Publish are the declared roots and this host's identity.
	Publish publish.Publisher
	// Secrets are values that must not be in the pack in any encoding
	// (the configured secret variables' values).
	Secrets []string
	// Forbid are more strings that must not be in the pack (internal host
	// names, project names), matched case-insensitively.
	Forbid []string
	// Summary feeds the pack's summary.md (its reconciliation).
	Summary        reports.SummaryOptions
	Now            time.Time
	HarnessVersion string
}

// Index is PACK.json.
type Index struct {
	Schema string `json:"schema"`
	Group  string `json:"group"`
	// CreatedAt and HarnessVersion say which export wrote the pack.
	CreatedAt      time.Time `json:"created_at"`
	HarnessVersion string    `json:"harness_version"`
	// Roots are the named roots the pack's text refers to ($NAME), with
	// what each is; never their paths on the run host.
	Roots []IndexRoot `json:"roots"`
	// Logs and LogTail say how logs were published.
	Logs    string `json:"logs"`
	LogTail int    `json:"log_tail,omitempty"`
	Rows    []Row  `json:"rows"`
	// GroupFiles are the group's files the pack holds (inventory.json and
	// the tables rendered from the pack's own evidence).
	GroupFiles []File `json:"group_files"`
}

// IndexRoot is a named root of the pack's text.
type IndexRoot struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Row is one checkpoint's evidence in the pack.
type Row struct {
	Profile string `json:"profile"`
	// Dir is the row's directory in the pack (<group>/<profile>).
	Dir     string `json:"dir"`
	Verdict string `json:"verdict"`
	// OriginalSeal and OriginalAlgorithm are the seal of the evidence the
	// row was exported from (its manifest.json's "seal" and digest
	// algorithm); Seal is the seal of the pack's manifest.json.
	OriginalSeal      string `json:"original_seal"`
	OriginalAlgorithm string `json:"original_digest_algorithm"`
	Seal              string `json:"seal"`
	Files             []File `json:"files"`
}

// File is one file of the original evidence and what the pack holds of it.
type File struct {
	Path   string `json:"path"`
	Action string `json:"action"`
	// OriginalDigest is its digest in the original seal ("" when it was
	// not sealed, e.g. the group's files); Digest its digest in the pack
	// (the pack's seal algorithm; "" when omitted).
	OriginalDigest string `json:"original_digest,omitempty"`
	Digest         string `json:"digest,omitempty"`
}

// Result is what Export wrote.
type Result struct {
	Path  string
	Rows  int
	Files int
	Bytes int64
	Index *Index
}

// InputError is evidence that cannot be exported as asked: no rows, a
// row whose evidence differs from its seal, a target that exists. Nothing
// is written.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// SealError is a row whose evidence differs from what its run sealed (or
// cannot be read): the pack is sealed again over what it holds, so it
// never takes such a row. Nothing is written.
type SealError struct {
	Profile, Dir, Message string
}

func (e *SealError) Error() string {
	return fmt.Sprintf("row %s (%s): %s; a pack is sealed again over what it holds, so it never takes evidence that differs from its seal", e.Profile, e.Dir, e.Message)
}

// Finding is one thing the pack would publish that must not leave the
// host.
type Finding struct {
	// File is the file's path in the pack; Line its 1-based line there
	// (0 for the file's name, or for a line --logs tail cuts); Source the
	// original file, and CutLine the line of Source that the tail cuts.
	File    string
	Line    int
	Source  string
	CutLine int
	Kind    string
	// Text is what was found (a secret is never shown).
	Text string
}

func (f Finding) String() string {
	loc := f.File
	if f.Line > 0 {
		loc = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	s := loc + ": " + f.Kind
	if f.Text != "" {
		s += " " + fmt.Sprintf("%q", f.Text)
	}
	switch {
	case f.CutLine > 0:
		s += fmt.Sprintf(" (line %d of %s, which --logs tail cuts: a log is scanned whole before it is cut)", f.CutLine, f.Source)
	case f.Source != "":
		s += " (from " + f.Source + ")"
	}
	return s
}

// LeakError is a pack refused: what it would publish holds what must not
// leave the host. Nothing is written.
type LeakError struct {
	Findings []Finding
}

// maxShown bounds the findings an error lists.
const maxShown = 25

func (e *LeakError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused: %d %s in what the pack would publish must not leave this host; nothing was written", len(e.Findings), text.Plural(len(e.Findings), "thing", "things"))
	for i, f := range e.Findings {
		if i == maxShown {
			fmt.Fprintf(&b, "\n  ... and %d more", len(e.Findings)-maxShown)
			break
		}
		b.WriteString("\n  " + f.String())
	}
	b.WriteString("\n(a path outside the named roots: declare its directory with --root NAME=DIR; a file the join reads is published byte for byte and cannot be scrubbed; logs can be left out with --logs none)")
	return b.String()
}

// Export writes the pack. On any error nothing is left at o.Output.
func Export(ctx context.Context, o Options) (*Result, error) {
	if o.Logs == "" {
		o.Logs = LogsNone
	}
	if o.LogTail <= 0 {
		o.LogTail = DefaultLogTail
	}
	name, err := checkOutput(o)
	if err != nil {
		return nil, err
	}
	rep, rows, err := loadRows(o)
	if err != nil {
		return nil, err
	}
	tmp, err := stagingDir(o)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	stage := filepath.Join(tmp, name)
	x := newExporter(o, o.Publish.Scrubber(rep), stage)
	idx, err := x.index(ctx, rows)
	if err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := x.writeScanned(IndexFile, "", append(data, '\n')); err != nil {
		return nil, err
	}
	// Everything the pack holds was scanned as it was written; the file
	// names are scanned too.
	x.scanNames()
	if len(x.findings) > 0 {
		sort.SliceStable(x.findings, func(i, j int) bool {
			if x.findings[i].File != x.findings[j].File {
				return x.findings[i].File < x.findings[j].File
			}
			return x.findings[i].Line < x.findings[j].Line
		})
		return nil, &LeakError{Findings: x.findings}
	}
	n, files, err := writeTarGz(ctx, stage, name, o.Output, idx.CreatedAt)
	if err != nil {
		return nil, err
	}
	return &Result{Path: o.Output, Rows: len(idx.Rows), Files: files, Bytes: n, Index: idx}, nil
}

// CheckOutput is checkOutput for a caller that checks the pack's place
// before anything slower (export re-derives every row first): a usage
// error (*InputError) when the pack may not go there.
func CheckOutput(output string, roots []string) error {
	_, err := checkOutput(Options{Output: output, Roots: roots})
	return err
}

// checkOutput checks where the pack goes: a new .tar.gz file in an
// existing directory, which, its links resolved, lies outside every
// evidence root it packs. It returns the pack's name.
func checkOutput(o Options) (string, error) {
	name, err := packName(o.Output)
	if err != nil {
		return "", &InputError{err}
	}
	if _, err := os.Lstat(o.Output); err == nil {
		return "", &InputError{fmt.Errorf("%s already exists; export never overwrites a pack: remove it or name another file", o.Output)}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := fileio.CheckDir(filepath.Dir(o.Output)); err != nil {
		return "", &InputError{fmt.Errorf("--output-file: %w", err)}
	}
	if err := fileio.CheckOutside(o.Output, o.Roots...); err != nil {
		return "", &InputError{fmt.Errorf("--output-file %w", err)}
	}
	return name, nil
}

// Names of what export leaves while it works: the staging directory (in
// the system's temporary directory) and the archive being written (beside
// the pack), each followed by the process id; RemoveStale removes those of
// an export that was killed.
const (
	stagingPrefix = "trtmc-qual-export-"
	archivePrefix = ".trtmc-qual-pack-"
)

// stagingDir makes the private directory the pack is staged in: outside
// the directory the pack is published in and outside every evidence root
// (the system's temporary directory, or the user's cache directory when
// the temporary directory is where the pack goes), mode 0700, removed by
// Export on every return — an interrupt included. What a killed export
// left there, and beside the pack, is removed first.
func stagingDir(o Options) (string, error) {
	pub := filepath.Dir(o.Output)
	fileio.RemoveStale(pub, archivePrefix)
	bases := []string{os.TempDir()}
	if cache, err := os.UserCacheDir(); err == nil {
		bases = append(bases, filepath.Join(cache, "trtmc-qual"))
	}
	for _, base := range bases {
		if fileio.CheckOutside(base, append([]string{pub}, o.Roots...)...) != nil {
			continue
		}
		if err := os.MkdirAll(base, 0o700); err != nil {
			continue
		}
		fileio.RemoveStale(base, stagingPrefix)
		return fileio.PrivateDir(base, stagingPrefix)
	}
	return "", &InputError{fmt.Errorf("no private directory to stage the pack in outside %s and the evidence roots (set TMPDIR to a directory elsewhere)", pub)}
}

// loadRows loads the group's report and the rows that have evidence; a
// row whose evidence changed or is malformed is refused: a pack holds only
// sealed, intact evidence.
func loadRows(o Options) (*reports.GroupReport, []*reports.Row, error) {
	rep, err := reports.Load(o.Roots, o.Group)
	if err != nil {
		return nil, nil, err
	}
	rep.Publisher = o.Publish
	var rows []*reports.Row
	for i := range rep.Rows {
		if rep.Rows[i].Dir() != "" {
			rows = append(rows, &rep.Rows[i])
		}
	}
	if len(rows) == 0 {
		return nil, nil, &InputError{fmt.Errorf("group %s: no rows in %s: nothing to export (did the run finish?)", o.Group, strings.Join(o.Roots, ", "))}
	}
	for _, row := range rows {
		for _, p := range row.Result.Problems {
			if p.Code == verdict.CodeEvidenceChanged || p.Code == verdict.CodeEvidenceMalformed {
				return nil, nil, &SealError{Profile: row.Profile, Dir: row.Dir(), Message: p.Message}
			}
		}
	}
	return rep, rows, nil
}

func newExporter(o Options, scrub *publish.Scrubber, stage string) *exporter {
	return &exporter{o: o, scrub: scrub, stage: stage, leaks: publish.NewLeakScanner(scrub, o.Secrets, o.Forbid)}
}

// index stages every row and the group's files, and returns the pack's
// index of them, with the named roots its text uses.
func (x *exporter) index(ctx context.Context, rows []*reports.Row) (*Index, error) {
	o := x.o
	idx := &Index{Schema: IndexSchema, Group: o.Group, CreatedAt: o.Now.UTC().Truncate(time.Second), HarnessVersion: o.HarnessVersion,
		Logs: o.Logs, Rows: []Row{}, GroupFiles: []File{}}
	if o.Logs == LogsTail {
		idx.LogTail = o.LogTail
	}
	if err := x.snapshot(ctx); err != nil {
		return nil, err
	}
	for _, row := range rows {
		r, err := x.row(ctx, row)
		if err != nil {
			return nil, err
		}
		idx.Rows = append(idx.Rows, *r)
	}
	if err := x.groupFiles(ctx, idx); err != nil {
		return nil, err
	}
	descs := publish.RootDescriptions()
	for _, n := range x.usedRoots() {
		idx.Roots = append(idx.Roots, IndexRoot{Name: n, Description: descs[n]})
	}
	if idx.Roots == nil {
		idx.Roots = []IndexRoot{}
	}
	return idx, nil
}

func packName(output string) (string, error) {
	base := filepath.Base(output)
	for _, ext := range []string{".tar.gz", ".tgz"} {
		if n, ok := strings.CutSuffix(base, ext); ok && n != "" && !strings.HasPrefix(n, ".") {
			return n, nil
		}
	}
	return "", fmt.Errorf("--output-file %s: a pack is a .tar.gz (or .tgz) file", output)
}

type exporter struct {
	o        Options
	scrub    *publish.Scrubber
	stage    string
	leaks    *publish.LeakScanner
	findings []Finding
	texts    []string // samples of published text, for the roots used
	// inv is the pack's inventory snapshot (scrubbed; nil: none), invSHA
	// its sha256 and invEntries each entry's digest: what the pack's rows
	// record of it (repin).
	inv        []byte
	invSHA     string
	invEntries map[string]string
}

// snapshot makes the pack's inventory snapshot and its digests.
func (x *exporter) snapshot(ctx context.Context) error {
	inv, err := x.inventory(ctx)
	if err != nil || inv == nil {
		return err
	}
	x.inv = inv
	if x.invSHA, x.invEntries, err = reports.SnapshotPins(inv); err != nil {
		return fmt.Errorf("the pack's inventory snapshot: %w", err)
	}
	return nil
}

// repin makes a row's record of the inventory snapshot the pack's own
// (the pack's snapshot is scrubbed, so its bytes and its entries' digests
// are not the run's): the entry digest where the row was run for the
// entry it is shown for, the snapshot's where the row recorded its root's
// snapshot as it was. A row that did neither keeps what it recorded, and
// stands for nothing in the pack either.
func (x *exporter) repin(path string, row *reports.Row) error {
	if x.inv == nil || (!row.Bound() && !row.HoldsSnapshot()) {
		return nil
	}
	return editProvenance(path, func(_ []byte, prov map[string]any) bool {
		if row.Bound() {
			prov["inventory_entry_sha256"] = x.invEntries[row.Profile]
		}
		if row.HoldsSnapshot() {
			prov["inventory_snapshot_sha256"] = x.invSHA
		}
		return true
	})
}

// editProvenance rewrites the result.json at path with its provenance
// object edited: edit gets the file's bytes and the object (numbers kept
// as written) and says whether it changed anything; the file is written
// back, indented and without HTML escapes, only then. A document without
// a provenance object is left as it is.
func editProvenance(path string, edit func(data []byte, prov map[string]any) bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	prov, _ := doc["provenance"].(map[string]any)
	if prov == nil || !edit(data, prov) {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func isLog(rel string) bool {
	return strings.HasSuffix(rel, ".log") || strings.HasPrefix(rel, "aiperf/logs/")
}

// row stages one checkpoint's directory and seals it.
func (x *exporter) row(ctx context.Context, row *reports.Row) (*Row, error) {
	src := row.Dir()
	rel := filepath.ToSlash(filepath.Join(x.o.Group, row.Profile))
	dst := filepath.Join(x.stage, filepath.FromSlash(rel))
	m, f := evidence.ReadManifest(src)
	if f != nil {
		return nil, &SealError{Profile: row.Profile, Dir: src, Message: evidence.ManifestFile + ": " + f.String()}
	}
	out := &Row{Profile: row.Profile, Dir: rel, Verdict: row.Result.Verdict, OriginalSeal: m.Seal, OriginalAlgorithm: m.Algorithm}
	var names []string
	for n := range m.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		file := File{Path: name, OriginalDigest: m.Files[name]}
		action, err := x.stageFile(ctx, row, name, filepath.Join(src, filepath.FromSlash(name)),
			filepath.Join(dst, filepath.FromSlash(name)), rel+"/"+name)
		if err != nil {
			return nil, err
		}
		file.Action = action
		out.Files = append(out.Files, file)
	}
	if err := x.reseal(out, m, dst); err != nil {
		return nil, err
	}
	return out, nil
}

// stageFile puts one file of a row's seal into the pack as its kind
// wants it (the join's inputs verbatim, logs left out or cut to a tail,
// the row scrubbed and re-pinned, the rest scrubbed) and returns what was
// done with it.
func (x *exporter) stageFile(ctx context.Context, row *reports.Row, name, from, to, packPath string) (string, error) {
	st, err := os.Lstat(from)
	switch {
	case err != nil:
		return "", err
	case !st.Mode().IsRegular():
		// A link (TRTMC's engine directory links to the served
		// bundle) or anything else: never followed, never published.
		return ActionOmitted, nil
	case slices.Contains(JoinInputs(), name):
		return ActionVerbatim, x.copyFile(ctx, packPath, from, to, false, 0)
	case isLog(name) && x.o.Logs == LogsNone:
		return ActionOmitted, nil
	case isLog(name) && x.o.Logs == LogsTail:
		return ActionTail, x.copyFile(ctx, packPath, from, to, true, x.o.LogTail)
	case name == reports.ResultFile:
		if err = x.copyFile(ctx, "", from, to, true, 0); err == nil {
			err = publishRow(to, x.scrub)
		}
		if err == nil {
			err = x.repin(to, row)
		}
		if err == nil {
			err = x.scanFile(packPath, from, to)
		}
		return ActionScrubbed, err
	default:
		return ActionScrubbed, x.copyFile(ctx, packPath, from, to, true, 0)
	}
}

// reseal seals the staged row directory dst again, over what the pack
// holds; the seal's provenance is the original's, scrubbed, and says where
// the row came from. It records the new seal and digests in out and scans
// the new manifest.
func (x *exporter) reseal(out *Row, m *evidence.Manifest, dst string) error {
	info := map[string]any{}
	for k, v := range m.Info {
		info[k] = v
	}
	info = reports.MapJSONStrings(info, x.scrub).(map[string]any)
	info["pack"] = map[string]any{"original_seal": m.Seal, "original_digest_algorithm": m.Algorithm, "exported_by": x.o.HarnessVersion}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if err := evidence.Seal(dst, info); err != nil {
		return err
	}
	nm, nf := evidence.ReadManifest(dst)
	if nf != nil {
		return fmt.Errorf("the pack's seal of %s: %s", out.Dir, nf)
	}
	out.Seal = nm.Seal
	for i := range out.Files {
		out.Files[i].Digest = nm.Files[out.Files[i].Path]
	}
	return x.scanFile(out.Dir+"/"+evidence.ManifestFile, "", filepath.Join(dst, evidence.ManifestFile))
}

// copyFile copies from into the pack, line by line: scrubbed (Text) or
// verbatim, the last tail lines only when tail > 0. Every line of the file
// is scanned as it would be published (scrubbed or not), the lines a tail
// cuts too: a private key's body and END line are known as such only from
// its BEGIN line, which the tail may cut. A scrubbed JSON document or JSON
// Lines line must still be valid JSON. packPath "" leaves the scan to the
// caller.
func (x *exporter) copyFile(ctx context.Context, packPath, from, to string, scrub bool, tail int) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	lr, closer, err := fileio.OpenLines(ctx, from, fileio.MaxLineBytes)
	if err != nil {
		return err
	}
	defer closer.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	var ring [][]byte // the last lines, for a tail
	var found []Finding
	scan := x.leaks.File()
	jsonLines := strings.HasSuffix(from, ".jsonl")
	changed := false
	lines := 0
	for {
		line, _, newline, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		lines++
		n := lines
		text := string(line)
		if scrub {
			mapped := x.scrub.Text(text)
			if mapped != text {
				changed = true
				if jsonLines && json.Valid(line) && !json.Valid([]byte(mapped)) {
					found = append(found, Finding{File: packPath, Line: n, Source: from, Kind: "scrubbing would break this JSON line"})
				}
			}
			text = mapped
		}
		if packPath != "" {
			scan.Line(text, func(l publish.Leak) {
				found = append(found, Finding{File: packPath, Line: n, Source: from, Kind: l.Kind, Text: l.Text})
			})
		}
		if newline {
			text += "\n"
		}
		if tail > 0 {
			ring = append(ring, []byte(text))
			if len(ring) > tail {
				ring = ring[1:]
			}
			continue
		}
		if _, err := io.WriteString(out, text); err != nil {
			return err
		}
	}
	if tail > 0 {
		tailLines(found, lines-len(ring))
	}
	x.findings = append(x.findings, found...)
	for _, l := range ring {
		if _, err := out.Write(l); err != nil {
			return err
		}
	}
	if err := out.Close(); err != nil {
		return err
	}
	if changed && strings.HasSuffix(from, ".json") && validJSONFile(from) && !validJSONFile(to) {
		x.findings = append(x.findings, Finding{File: packPath, Source: from, Kind: "scrubbing would break this JSON document"})
	}
	return nil
}

// tailLines numbers findings as the pack holds a tail that starts after
// line first of the original; a finding in a line the tail cuts is named
// by its line in the original (CutLine).
func tailLines(found []Finding, first int) {
	for i := range found {
		if found[i].Line > first {
			found[i].Line -= first
		} else if found[i].Line > 0 {
			found[i].CutLine, found[i].Line = found[i].Line, 0
		}
	}
}

// validJSONFile reports whether a file is one JSON document, reading it
// token by token (no copy of the document is held).
func validJSONFile(path string) bool {
	f, _, err := fileio.OpenRegular(path)
	if err != nil {
		return false
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return depth == 0
		}
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// publishRow finishes a scrubbed result.json for the pack. It records
// every root its text refers to ($NAME) as {"name": NAME, "path": "$NAME"}
// in provenance.roots, so that a report of the pack knows "$NAME/rest" is
// a path under a root even where NAME was declared only when exporting
// (--root). It drops provenance.host_top_dirs, the run host's listing of /:
// the scrubber used it to map the evidence's paths, which the pack holds
// mapped, and published it would fingerprint the host in every pack.
func publishRow(path string, scrub *publish.Scrubber) error {
	return editProvenance(path, func(data []byte, prov map[string]any) bool {
		_, changed := prov["host_top_dirs"]
		delete(prov, "host_top_dirs")
		have := map[string]bool{}
		list, _ := prov["roots"].([]any)
		for _, r := range list {
			if m, ok := r.(map[string]any); ok {
				if n, ok := m["name"].(string); ok {
					have[n] = true
				}
			}
		}
		for _, n := range scrub.UsedRoots(string(data)) {
			if !have[n] {
				list = append(list, map[string]any{"name": n, "path": "$" + n})
				changed = true
			}
		}
		if changed && len(list) > 0 {
			prov["roots"] = list
		}
		return changed
	})
}

// groupFiles writes the group's inventory snapshot (scrubbed) and the
// tables and summary rendered from the pack's own evidence.
func (x *exporter) groupFiles(ctx context.Context, idx *Index) error {
	g := x.o.Group
	if inv := x.inv; inv != nil {
		if err := x.writeScanned(g+"/"+reports.InventoryFile, "", inv); err != nil {
			return err
		}
		idx.GroupFiles = append(idx.GroupFiles, File{Path: g + "/" + reports.InventoryFile, Action: ActionScrubbed})
	}
	rep, err := reports.Load([]string{x.stage}, g)
	if err != nil {
		return fmt.Errorf("load the pack's evidence: %w", err)
	}
	rep.Summary = x.o.Summary
	rep.Summary.Pack = filepath.Base(x.o.Output)
	pub, err := x.o.Publish.Public(rep)
	if err != nil {
		return err
	}
	files := reports.GroupFiles()
	for _, name := range slices.Sorted(mapsKeys(files)) {
		var buf bytes.Buffer
		r := *pub
		r.LinkDir = filepath.Join(x.stage, g)
		if err := reports.Render(&buf, &r, files[name]); err != nil {
			return err
		}
		if err := x.writeScanned(g+"/"+name, "", buf.Bytes()); err != nil {
			return err
		}
		idx.GroupFiles = append(idx.GroupFiles, File{Path: g + "/" + name, Action: ActionRendered})
	}
	var sum bytes.Buffer
	if err := reports.Render(&sum, pub, reports.FormatSummary); err != nil {
		return err
	}
	if err := x.writeScanned(SummaryFile, "", sum.Bytes()); err != nil {
		return err
	}
	idx.GroupFiles = append(idx.GroupFiles, File{Path: SummaryFile, Action: ActionRendered})
	for _, row := range pub.Rows {
		if row.Reproduce != nil {
			x.texts = append(x.texts, row.Reproduce.Command, strings.Join(row.Reproduce.AIPerfArgv, " "))
		}
	}
	return nil
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// inventory is the union of the roots' inventory snapshots (the first
// root's profile of an id wins, as report does), scrubbed; nil when no
// root has one.
func (x *exporter) inventory(ctx context.Context) ([]byte, error) {
	var union []any
	seen := map[string]bool{}
	found := false
	for _, root := range x.o.Roots {
		p := filepath.Join(root, x.o.Group, reports.InventoryFile)
		data, err := fileio.ReadFile(ctx, p, fileio.MaxDocumentBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		found = true
		var list []map[string]any
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, &InputError{fmt.Errorf("%s: %w", p, err)}
		}
		for _, prof := range list {
			id, _ := prof["id"].(string)
			if !seen[id] {
				seen[id] = true
				union = append(union, reports.MapJSONStrings(prof, x.scrub))
			}
		}
	}
	if !found {
		return nil, nil
	}
	data, err := json.MarshalIndent(union, "", " ")
	return append(data, '\n'), err
}

// writeScanned writes data at the pack path rel, scanning each line.
func (x *exporter) writeScanned(rel, source string, data []byte) error {
	to := filepath.Join(x.stage, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		return err
	}
	return x.scanFile(rel, source, to)
}

// scanFile scans every line of a staged file with the leak scanner.
func (x *exporter) scanFile(rel, source, path string) error {
	lr, closer, err := fileio.OpenLines(context.Background(), path, fileio.MaxLineBytes)
	if err != nil {
		return err
	}
	defer closer.Close()
	scan := x.leaks.File()
	for {
		line, n, _, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		scan.Line(string(line), func(l publish.Leak) {
			x.findings = append(x.findings, Finding{File: rel, Line: n, Source: source, Kind: l.Kind, Text: l.Text})
		})
	}
}

// scanNames scans the names of every file the pack holds.
func (x *exporter) scanNames() {
	_ = filepath.WalkDir(x.stage, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == x.stage {
			return err
		}
		rel, _ := filepath.Rel(x.stage, p)
		rel = filepath.ToSlash(rel)
		x.leaks.Text(rel, func(l publish.Leak) {
			x.findings = append(x.findings, Finding{File: rel, Kind: l.Kind + " in a file name", Text: l.Text})
		})
		return nil
	})
}

// usedRoots are the root names the pack's text refers to.
func (x *exporter) usedRoots() []string {
	return x.scrub.UsedRoots(x.texts...)
}

// writeTarGz writes the staged tree as name/... into a temporary file
// beside output, then links it to output (never replacing a file that
// appeared meanwhile). Entries are sorted, owned by uid/gid 0 with no user
// or group names, dated mtime: the same tree gives the same archive.
func writeTarGz(ctx context.Context, stage, name, output string, mtime time.Time) (int64, int, error) {
	tmp, err := os.CreateTemp(filepath.Dir(output), fileio.StaleName(archivePrefix))
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(tmp.Name())
	size, files, err := writeArchive(ctx, tmp, stage, name, mtime)
	if err != nil {
		return 0, 0, err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return 0, 0, err
	}
	if err := os.Link(tmp.Name(), output); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return 0, 0, &InputError{fmt.Errorf("%s appeared while the pack was written; it was left alone and nothing was written", output)}
		}
		return 0, 0, err
	}
	return size, files, fileio.SyncDir(filepath.Dir(output))
}

// writeArchive writes the staged tree into tmp as a gzipped tar, syncs
// and closes it (closed on every path), and returns its size and the
// number of files it holds.
func writeArchive(ctx context.Context, tmp *os.File, stage, name string, mtime time.Time) (int64, int, error) {
	files, err := tarTree(ctx, tmp, stage, name, mtime)
	if err == nil {
		err = tmp.Sync()
	}
	var st fs.FileInfo
	if err == nil {
		st, err = tmp.Stat()
	}
	if err != nil {
		tmp.Close()
		return 0, 0, err
	}
	if err := tmp.Close(); err != nil {
		return 0, 0, err
	}
	return st.Size(), files, nil
}

// tarTree writes the staged tree as name/... to w, gzipped, its entries
// in sorted order, and returns the number of regular files written.
func tarTree(ctx context.Context, w io.Writer, stage, name string, mtime time.Time) (int, error) {
	gz := gzip.NewWriter(w)
	gz.ModTime = mtime
	tw := tar.NewWriter(gz)
	var paths []string
	err := filepath.WalkDir(stage, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return 0, err
	}
	sort.Strings(paths)
	files := 0
	for _, p := range paths {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		rel, _ := filepath.Rel(stage, p)
		regular, err := tarEntry(tw, p, path.Join(name, filepath.ToSlash(rel)), mtime)
		if err != nil {
			return 0, err
		}
		if regular {
			files++
		}
	}
	if err := tw.Close(); err != nil {
		return 0, err
	}
	return files, gz.Close()
}

// tarEntry writes the staged file or directory p as entry (owned by
// uid/gid 0, dated mtime) and reports whether it was a regular file;
// anything else is never staged and is skipped.
func tarEntry(tw *tar.Writer, p, entry string, mtime time.Time) (bool, error) {
	st, err := os.Lstat(p)
	if err != nil {
		return false, err
	}
	h := &tar.Header{Name: entry, ModTime: mtime, Format: tar.FormatPAX}
	switch {
	case st.IsDir():
		h.Typeflag, h.Name, h.Mode = tar.TypeDir, entry+"/", 0o755
	case st.Mode().IsRegular():
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, st.Size()
	default:
		return false, nil // never staged
	}
	if err := tw.WriteHeader(h); err != nil {
		return false, err
	}
	if h.Typeflag != tar.TypeReg {
		return false, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	_, err = io.Copy(tw, f)
	f.Close()
	return err == nil, err
}

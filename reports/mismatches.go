package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// The HTML report shows both answers of the first maxDiffsShown mismatched
// requests of a row, read from the row's mismatches.jsonl as the run sealed
// it, and nothing it cannot prove is that file.
const (
	// maxMismatchesBytes caps mismatches.jsonl as the report reads it:
	// past it, no answer is shown (the file is still linked).
	maxMismatchesBytes = fileio.MaxDocumentBytes
	// maxAnswerKept caps each answer kept for the page (bytes, at a rune
	// boundary): the word diff and the page see no more of it.
	maxAnswerKept = 64 << 10
)

// shownMismatch is one mismatched request's two answers as the page shows
// them: a chat answer's text, or a structured answer's compact JSON.
type shownMismatch struct {
	Native, HTTP string
	// NativeClipped and HTTPClipped say an answer was longer than
	// maxAnswerKept.
	NativeClipped, HTTPClipped bool
}

// rowMismatches are the answers of a row's shown mismatches, by request
// id, or the reason there are none (Note).
type rowMismatches struct {
	byID map[string]shownMismatch
	note string
}

// shownMismatchIDs are the ids of the mismatches the page shows: the first
// maxDiffsShown mismatched requests in start order.
func shownMismatchIDs(lines []verdict.JoinedLine) []string {
	var ids []string
	for _, l := range orderedRequests(lines) {
		if l.Status == verdict.JoinMismatched && len(ids) < maxDiffsShown {
			ids = append(ids, l.RequestID)
		}
	}
	return ids
}

// readSealedMismatches reads the answers of the requests ids from the
// evidence directory's mismatches.jsonl, only as its run sealed it: the
// manifest must hold its seal, use a current digest algorithm and list the
// file, and the bytes read (a regular file of at most maxMismatchesBytes)
// must have the listed digest. Anything else shows no answer, and the note
// says why; a malformed line refuses the whole file, naming the line.
func readSealedMismatches(dir string, ids []string) rowMismatches {
	if len(ids) == 0 {
		return rowMismatches{}
	}
	data, why := readSealed(dir, MismatchesFile, maxMismatchesBytes)
	if why != "" {
		return rowMismatches{note: why}
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	out := rowMismatches{byID: map[string]shownMismatch{}}
	for n, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m verdict.MismatchLine
		if err := json.Unmarshal(line, &m); err != nil || m.RequestID == "" {
			if err == nil {
				err = errors.New("missing request_id")
			}
			return rowMismatches{note: fmt.Sprintf("%s line %d: %v; no answer is shown", MismatchesFile, n+1, err)}
		}
		if _, seen := out.byID[m.RequestID]; want[m.RequestID] && !seen {
			var s shownMismatch
			s.Native, s.NativeClipped = answerText(m.Native)
			s.HTTP, s.HTTPClipped = answerText(m.HTTP)
			out.byID[m.RequestID] = s
		}
	}
	return out
}

// readSealed reads one file of a sealed evidence directory, at most limit
// bytes, and checks the bytes read against the digest the manifest lists
// for it; why says why nothing was read.
func readSealed(dir, rel string, limit int64) (data []byte, why string) {
	dg, sealed, why := sealedEntry(dir, rel)
	if why != "" {
		return nil, why
	}
	path := filepath.Join(dir, filepath.FromSlash(rel))
	data, err := fileio.ReadFile(context.Background(), path, limit)
	if err != nil {
		return nil, fmt.Sprintf("%s is not read: %s", rel, fileio.ReadProblem("it", path, err))
	}
	if dg.Bytes(data) != sealed {
		return nil, fmt.Sprintf("%s is not read: it is not the file the run sealed (its digest differs)", rel)
	}
	return data, ""
}

// sealedEntry is the digester of a sealed evidence directory's manifest
// and the digest it lists for rel; why says why the file must not be read
// (no sound seal, a retired algorithm, a file the seal does not list).
func sealedEntry(dir, rel string) (dg evidence.Digester, sealed, why string) {
	m, f := evidence.ReadManifest(dir)
	switch {
	case f != nil:
		return dg, "", fmt.Sprintf("%s is not read: the evidence's seal is not sound (%s)", rel, f)
	case evidence.Retired(m.Algorithm):
		return dg, "", fmt.Sprintf("%s is not read: the evidence is sealed with the retired %s", rel, m.Algorithm)
	}
	sealed, listed := m.Files[rel]
	if !listed {
		return dg, "", fmt.Sprintf("%s is not read: the sealed manifest does not list it", rel)
	}
	dg, _ = evidence.DigesterFor(m.Algorithm) // ReadManifest knows it
	return dg, sealed, ""
}

// answerText is a canonical answer as the page shows it: a JSON string's
// text (a chat answer), else the compact JSON itself, at most
// maxAnswerKept bytes, valid UTF-8; clipped says it was longer.
func answerText(raw json.RawMessage) (s string, clipped bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxAnswerKept {
		return s, false
	}
	cut := maxAnswerKept
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// mapped is the public copy's: every answer and the note mapped by m.
func (r rowMismatches) mapped(m Mapper) rowMismatches {
	out := rowMismatches{note: m.Text(r.note)}
	if r.byID != nil {
		out.byID = make(map[string]shownMismatch, len(r.byID))
		for id, s := range r.byID {
			s.Native, s.HTTP = m.Text(s.Native), m.Text(s.HTTP)
			out.byID[id] = s
		}
	}
	return out
}

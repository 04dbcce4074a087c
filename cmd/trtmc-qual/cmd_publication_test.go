package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

// Publication read closed (issue 32 items 4 and 5), through the verbs
// users run: criteria never come from the file being judged, and what is
// published is what the evidence gives. docs/reliability.md lists the
// cases ("Publication read closed (issue 32), part A").

// resealLegacy seals dir again in the retired sha256-tree-1mib, as the
// issue's twenty lines of Python do (hashlib only).
func resealLegacy(t *testing.T, dir string) {
	t.Helper()
	d, ok := evidence.DigesterFor(evidence.AlgoSHA256Tree)
	require.True(t, ok)
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if evidence.IsUnsealed(rel) {
			return nil
		}
		files[filepath.ToSlash(rel)], err = d.File(path)
		return err
	}))
	zero := strings.Repeat("0", 64)
	data, err := json.MarshalIndent(evidence.Manifest{Schema: evidence.ManifestSchema, Info: map[string]any{"harness_version": "legacy"},
		Algorithm: evidence.AlgoSHA256Tree, Files: files, Seal: zero}, "", "  ")
	require.NoError(t, err)
	data = append(data, '\n')
	sum := sha256.Sum256(data)
	data = bytes.Replace(data, []byte(`"seal": "`+zero+`"`), []byte(`"seal": "`+hex.EncodeToString(sum[:])+`"`), 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, evidence.ManifestFile), data, 0o644))
}

// fiveDiffer changes 5 of the 55 native answers by 0.1 in one confidence:
// boxes-tolerance with the family's tolerance 0 finds them mismatched.
func fiveDiffer(t *testing.T) func(dir string) {
	return func(dir string) {
		path := filepath.Join(dir, synth.FileNative)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		lines := strings.SplitAfter(string(data), "\n")
		n := 0
		for i := range lines {
			if n < 5 && strings.Contains(lines[i], `"confidence":0.9`) {
				lines[i] = strings.Replace(lines[i], `"confidence":0.9`, `"confidence":0.8`, 1)
				n++
			}
		}
		require.Equal(t, 5, n)
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644))
	}
}

func rowJSON(t *testing.T, out string) *verdict.Result {
	t.Helper()
	var rep reports.GroupReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Rows, 1)
	require.NotNil(t, rep.Rows[0].Result)
	return rep.Rows[0].Result
}

func reasonCodesOf(r *verdict.Result) []verdict.Code {
	var out []verdict.Code
	for _, x := range r.Reasons {
		out = append(out, x.Code)
	}
	return out
}

// Issue 32 item 4: a row failed with 5 of 55 answers different; only
// answers.tolerance is changed in result.json and the row resealed — with
// the current seal, and with the retired sha256-tree-1mib one a few lines
// of hashlib make. The rejudge takes the tolerance from the family
// configuration: the five are still mismatched, and the stored tolerance
// is itself a finding; never "qualified (rejudged; was failed)".
func TestRejudgeTakesCriteriaFromTheConfiguration(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		name := map[bool]string{false: "resealed", true: "resealed in sha256-tree-1mib"}[legacy]
		t.Run(name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "out")
			writeSynth(t, root, "detection", synth.FamilyDetect, "ref-detect-small", 1, fiveDiffer(t))
			rows := promote(t, root, "detection")
			require.Equal(t, verdict.VerdictFailed, rows[0].Verdict, "%+v", rows[0].Reasons)
			require.Equal(t, 5, rows[0].Requests.Mismatched)
			dir := filepath.Join(root, "detection", "ref-detect-small")
			editStored(t, root, "detection", "ref-detect-small", func(r *verdict.Result) { r.Answers.Tolerance = 0.2 })
			if legacy {
				resealLegacy(t, dir)
				code, out, _ := runCLI(t, nil, "report", "--from", root, "--group", "detection", "-o", "json")
				assert.Equal(t, exitFailed, code)
				r := rowJSON(t, out)
				assert.Equal(t, verdict.VerdictError, r.Verdict, "a row under the retired seal is never trusted as stored")
				assert.Contains(t, reasonCodesOf(r), verdict.CodeSealLegacy)
			}
			code, out, errOut := runCLI(t, nil, "report", "--from", root, "--group", "detection", "--rejudge", "-o", "json")
			assert.Equal(t, exitFailed, code, errOut)
			r := rowJSON(t, out)
			assert.NotEqual(t, verdict.VerdictQualified, r.Verdict)
			assert.Equal(t, 5, r.Requests.Mismatched, "judged with the configuration's tolerance 0")
			assert.Contains(t, reasonCodesOf(r), verdict.CodeCriteriaDiffer)
			assert.Contains(t, reasonCodesOf(r), verdict.CodeMismatched)
			assert.Equal(t, float64(0), r.Answers.Tolerance, "the re-judged row shows the criteria it was judged by")
			found := false
			for _, x := range r.Reasons {
				if x.Code == verdict.CodeCriteriaDiffer {
					found = true
					assert.Contains(t, x.Message, "the row stores tolerance: 0.2, the configuration's 0 (family ref-detect")
				}
			}
			assert.True(t, found)
		})
	}
}

// Our hostile cases on the criteria (H45–H50): each breaks one criterion
// a good row stores, or the configuration the rejudge is given; none
// re-judges as qualified, and each names what differs.
func TestRejudgeCriteriaHostile(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(t *testing.T, root string) []string // extra flags
		want string
	}{
		"H45 the row's labels: one dropped": {func(t *testing.T, root string) []string {
			editStored(t, root, "detection", "ref-detect-small", func(r *verdict.Result) { r.Answers.Labels = r.Answers.Labels[1:] })
			return nil
		}, "the row stores labels: "},
		"H46 the row's comparator": {func(t *testing.T, root string) []string {
			editStored(t, root, "detection", "ref-detect-small", func(r *verdict.Result) { r.Answers.Comparator = "exact" })
			return nil
		}, `the row stores comparator: "exact", the configuration's "boxes-tolerance"`},
		"H47 the row's served model": {func(t *testing.T, root string) []string {
			editStored(t, root, "detection", "ref-detect-small", func(r *verdict.Result) { r.Answers.ServedModel = "another-model" })
			return nil
		}, `the row stores served model "another-model"; its inventory entry serves "ref-detect-small"`},
		"H48 the row's criteria digest": {func(t *testing.T, root string) []string {
			editStored(t, root, "detection", "ref-detect-small", func(r *verdict.Result) {
				r.Provenance.FamilyCriteriaSHA256 = strings.Repeat("e", 64)
			})
			return nil
		}, "the row was run with criteria of digest eeeeeeeeeeee; family ref-detect in"},
		"H49 a configuration without the row's family": {func(t *testing.T, root string) []string {
			fams := filepath.Join(t.TempDir(), "families.yaml")
			data, err := os.ReadFile(repoFile("families", "families.yaml"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(fams, bytes.Replace(data, []byte("  ref-detect:\n"), []byte("  ref-detect-old:\n"), 1), 0o644))
			return []string{"--families", fams}
		}, `has no family "ref-detect"`},
		"H50 a configuration loosened by hand": {func(t *testing.T, root string) []string {
			fams := filepath.Join(t.TempDir(), "families.yaml")
			data, err := os.ReadFile(repoFile("families", "families.yaml"))
			require.NoError(t, err)
			i := bytes.Index(data, []byte("  ref-detect:\n"))
			require.Positive(t, i)
			loose := append(append([]byte{}, data[:i]...), bytes.Replace(data[i:], []byte("    tolerance: 0\n"), []byte("    tolerance: 0.5\n"), 1)...)
			require.NoError(t, os.WriteFile(fams, loose, 0o644))
			return []string{"--families", fams}
		}, "the row stores tolerance: 0, the configuration's 0.5"},
	} {
		t.Run(name, func(t *testing.T) {
			root := publishableRoot(t, "ref-detect-small")
			flags := tc.edit(t, root)
			code, out, errOut := runCLI(t, nil, append([]string{"report", "--from", root, "--group", "detection", "--rejudge", "-o", "json"}, flags...)...)
			assert.Equal(t, exitFailed, code, errOut)
			r := rowJSON(t, out)
			assert.NotEqual(t, verdict.VerdictQualified, r.Verdict)
			var msgs []string
			for _, x := range r.Reasons {
				if x.Code == verdict.CodeCriteriaDiffer {
					msgs = append(msgs, x.Message)
				}
			}
			assert.Contains(t, strings.Join(msgs, "\n"), tc.want)
		})
	}
}

// The retired seal (issue 32 item 4): evidence sealed with
// sha256-tree-1mib and intact is never trusted as stored — `report` shows
// an error row —, is re-judged by `--rejudge` (qualified, with a note),
// and an export of it is sealed in the current algorithm (H51).
func TestRetiredSealIsReJudgedNeverTrusted(t *testing.T) {
	root := publishableRoot(t, "ref-detect-small")
	dir := filepath.Join(root, "detection", "ref-detect-small")
	resealLegacy(t, dir)
	code, out, _ := runCLI(t, nil, "report", "--from", root, "--group", "detection", "-o", "json")
	assert.Equal(t, exitFailed, code)
	r := rowJSON(t, out)
	assert.Equal(t, verdict.VerdictError, r.Verdict)
	assert.Equal(t, []verdict.Code{verdict.CodeSealLegacy}, reasonCodesOf(r))

	code, out, errOut := runCLI(t, nil, "report", "--from", root, "--group", "detection", "--rejudge", "-o", "json")
	assert.Equal(t, exitOK, code, errOut)
	r = rowJSON(t, out)
	assert.Equal(t, verdict.VerdictQualified, r.Verdict, "%+v", r.Reasons)
	assert.Contains(t, strings.Join(r.Notes, "\n"), "sealed with the retired sha256-tree-1mib: re-judged from its raw artifacts")

	pack := filepath.Join(t.TempDir(), "p.tar.gz")
	code, _, errOut = runCLI(t, nil, "export", "--from", root, "--group", "detection", "--output-file", pack)
	require.Equal(t, exitOK, code, errOut)
	x := t.TempDir()
	golden.ExtractTarGz(t, pack, x)
	m, f := evidence.ReadManifest(filepath.Join(x, "p", "detection", "ref-detect-small"))
	require.Nil(t, f)
	assert.Equal(t, evidence.DigestAlgorithm, m.Algorithm, "nothing new is sealed in the retired algorithm")
	code, _, errOut = runCLI(t, nil, "report", "--from", filepath.Join(x, "p"), "--group", "detection")
	assert.Equal(t, exitOK, code, errOut)
}

// Issue 32 item 5 and our cases: a stored figure edited and the row
// resealed is never published — export, --update-doc and -o summary each
// re-derive the rows and refuse, naming the row and what differs, and
// write nothing; `report --rejudge` shows the real figures.
func TestPublicationsPublishWhatIsReDerived(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(r *verdict.Result)
		want []string
	}{
		// The issue's: p50 and images/s edited.
		"p50 and images/s": {func(r *verdict.Result) {
			v, ips := 0.5, 999.0
			r.LatencyMS.HTTP.P50, r.ImagesPerSec = &v, &ips
		}, []string{"HTTP p50/p95 ms: stored [0.5,", "images/s: stored 999, re-derived 50"}},
		// H52: the Task p95 only.
		"Task p95": {func(r *verdict.Result) { v := 0.1; r.LatencyMS.Task.P95 = &v }, []string{"Task p50/p95 ms: stored ["}},
		// H53: a correctness gate's value.
		"a gate's value": {func(r *verdict.Result) { r.Correctness.Gates[0].Value = 0.99 }, []string{"correctness: stored "}},
		// H54: the boxes count.
		"boxes": {func(r *verdict.Result) { n := 1; r.Boxes = &n }, []string{"boxes: stored 1, re-derived "}},
		// Issue 35: a percentile's interval, and images/s's, edited.
		"p90's interval": {func(r *verdict.Result) {
			iv := r.LatencyMS.HTTP.Interval(90)
			if iv == nil || iv.Lower == nil {
				panic("the promoted row has no p90 interval")
			}
			v := *iv.Lower / 2
			iv.Lower = &v
		}, []string{"HTTP p90/p99 ms, intervals, drift and spread across trials: stored "}},
		// The synthetic requests overlap (not concurrency 1): the evidence
		// gives no images/s interval, and a stored one is refused.
		"images/s interval": {func(r *verdict.Result) {
			if r.ImagesPerSecInterval != nil {
				panic("the synthetic requests overlap: no images/s interval")
			}
			up := 60.0
			r.ImagesPerSecInterval = &verdict.RateInterval{N: 50, Images: 50, Point: 50, Lower: 40, Upper: &up, Confidence: 0.95, Method: "studentized_bootstrap_of_cycles"}
		}, []string{"images/s interval and spread across trials: stored [{"}},
		// H55: the measured counts.
		"measured counts": {func(r *verdict.Result) {
			m := r.RequestsByPhase[verdict.PhaseMeasured]
			m.Matched, m.Mismatched = m.Matched-1, 1
			r.RequestsByPhase[verdict.PhaseMeasured] = m
		}, []string{"requests (measured): stored "}},
	} {
		t.Run(name, func(t *testing.T) {
			root := publishableRoot(t, "ref-detect-small")
			editStored(t, root, "detection", "ref-detect-small", tc.edit)
			check := func(what string, code exitCode, stdout, errOut string) {
				t.Helper()
				assert.Equal(t, exitFailed, code, "%s: %s", what, errOut)
				assert.Empty(t, stdout, what)
				assert.Contains(t, errOut, "refused: group detection: 1 row's stored verdict or figures are not what its evidence gives when re-derived; nothing was published", what)
				assert.Contains(t, errOut, "ref-detect-small: ", what)
				for _, w := range tc.want {
					assert.Contains(t, errOut, w, what)
				}
			}
			pack := filepath.Join(t.TempDir(), "p.tar.gz")
			code, out, errOut := runCLI(t, nil, "export", "--from", root, "--group", "detection", "--output-file", pack)
			check("export", code, out, errOut)
			assertNoFile(t, pack)

			page := filepath.Join(t.TempDir(), "page.md")
			require.NoError(t, os.WriteFile(page, []byte(docPage), 0o644))
			code, out, errOut = runCLI(t, nil, "report", "--from", root, "--group", "detection", "--update-doc", page)
			check("update-doc", code, out, errOut)
			data, err := os.ReadFile(page)
			require.NoError(t, err)
			assert.Equal(t, docPage, string(data), "the page is untouched")

			code, out, errOut = runCLI(t, nil, "report", "--from", root, "--group", "detection", "-o", "summary")
			check("summary", code, out, errOut)
		})
	}
}

// H56: the whole of issue 32 item 4's forgery — the five mismatches
// counted as matched and the tolerance loosened, resealed: plain `report`
// trusts the stored facts (a resealed manifest is what the seal cannot
// tell; docs/reliability.md says so), but nothing publishes it, and the
// rejudge shows the failure.
func TestAForgedGreenRowIsNeverPublished(t *testing.T) {
	root := filepath.Join(t.TempDir(), "out")
	writeSynth(t, root, "detection", synth.FamilyDetect, "ref-detect-small", 1, fiveDiffer(t))
	require.Equal(t, verdict.VerdictFailed, promote(t, root, "detection")[0].Verdict)
	editStored(t, root, "detection", "ref-detect-small", func(r *verdict.Result) {
		r.Answers.Tolerance = 0.2
		for _, ph := range []string{verdict.PhaseWarmup, verdict.PhaseMeasured} {
			c := r.RequestsByPhase[ph]
			c.Matched, c.Mismatched = c.Matched+c.Mismatched, 0
			r.RequestsByPhase[ph] = c
		}
		r.Requests = r.RequestsByPhase[verdict.PhaseWarmup].Add(r.RequestsByPhase[verdict.PhaseMeasured])
		r.LatencyMS.HTTP.Count, r.LatencyMS.Task.Count = 50, 50
	})
	code, out, _ := runCLI(t, nil, "report", "--from", root, "--group", "detection", "-o", "json")
	require.Equal(t, exitOK, code, "the stored facts are consistent: plain report cannot tell")
	assert.Equal(t, verdict.VerdictQualified, rowJSON(t, out).Verdict)

	code, out, errOut := runCLI(t, nil, "report", "--from", root, "--group", "detection", "-o", "summary")
	assert.Equal(t, exitFailed, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "ref-detect-small: verdict: stored qualified, re-derived error (criteria_differ: ")
	assert.Contains(t, errOut, "requests: stored ")
	pack := filepath.Join(t.TempDir(), "p.tar.gz")
	code, _, _ = runCLI(t, nil, "export", "--from", root, "--group", "detection", "--output-file", pack)
	assert.Equal(t, exitFailed, code)
	assertNoFile(t, pack)
	code, out, _ = runCLI(t, nil, "report", "--from", root, "--group", "detection", "--rejudge", "-o", "json")
	assert.Equal(t, exitFailed, code)
	assert.Equal(t, 5, rowJSON(t, out).Requests.Mismatched)
}

// Issue 32 item 1 through export: the pack of a group whose evidence has
// no inventory snapshot has none either, and its summary.md says NOT
// complete, naming it (H57).
func TestPackSummaryOfAGroupWithoutItsSnapshot(t *testing.T) {
	root := publishableRoot(t, "ref-detect-small")
	require.NoError(t, os.Remove(filepath.Join(root, "detection", reports.InventoryFile)))
	pack := filepath.Join(t.TempDir(), "p.tar.gz")
	code, _, errOut := runCLI(t, nil, "export", "--from", root, "--group", "detection", "--output-file", pack)
	require.Equal(t, exitOK, code, errOut)
	x := t.TempDir()
	golden.ExtractTarGz(t, pack, x)
	summary, err := os.ReadFile(filepath.Join(x, "p", "summary.md"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(summary), "**detection: NOT complete"), string(summary))
	assert.Contains(t, string(summary), "the inventory snapshot (`detection/inventory.json`): not in the evidence")
}

func assertNoFile(t *testing.T, path string) {
	t.Helper()
	_, err := os.Lstat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "%s was written", path)
}

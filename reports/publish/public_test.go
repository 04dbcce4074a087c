package publish

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

func testScrubber() *Scrubber {
	return NewScrubber([]verdict.Root{
		{Name: RootOut, Path: "/tmp/pub/home/alice/out"},
		{Name: RootHarness, Path: "/work/trtmc-qual"},
		{Name: RootAIPerfVenv, Path: "/work/trtmc-qual/.venv"},
		{Name: RootTRTMC, Path: "/data/src/TensorRT-Model-Connect"},
	}, Identity{Hosts: []string{"gpu-node-17.cluster.example"}, Users: []string{"jdoe", "root"}})
}

func TestScrubberText(t *testing.T) {
	s := testScrubber()
	for in, want := range map[string]string{
		"/tmp/pub/home/alice/out/vlm/x/result.json":              "$OUT/vlm/x/result.json",
		`"path": "/work/trtmc-qual/.venv/bin/aiperf"`:            `"path": "$AIPERF_VENV/bin/aiperf"`,
		"--config=/work/trtmc-qual/trtmc-qual.yaml":              "--config=$HARNESS/trtmc-qual.yaml",
		"/work/trtmc-qualx/y":                                    "[private]/y", // not under the root: a boundary
		"cd /data/src/TensorRT-Model-Connect && pytest":          "cd $TRTMC_REPO && pytest",
		"server exited; see /home/jdoe/.cache/x.log":             "server exited; see [private]/x.log",
		"log at /var/log/gpu-node-17.log":                        "log at [private]",
		"on gpu-node-17.cluster.example (gpu-node-17) as jdoe":   "on [host] ([host]) as [user]",
		"GPU-NODE-17 rebooted":                                   "[host] rebooted",
		"alice ran it":                                           "[user] ran it", // learned from /home/alice
		"user root, the native runner":                           "user root, the native runner",
		"listening on 10.1.2.3:8000 and [fd00::12]:80":           "listening on [ip]:8000 and [[ip]]:80",
		"http://127.0.0.1:35493/v1/chat/completions and ::1":     "http://127.0.0.1:35493/v1/chat/completions and ::1",
		"route /v1/infer, /health/ready, 0.0.0.0:8000":           "route /v1/infer, /health/ready, 0.0.0.0:8000",
		"aiperf==0.13.0.1 torch>=2.5.1.0 at 12:30:45":            "aiperf==0.13.0.1 torch>=2.5.1.0 at 12:30:45",
		"file:///tmp/pub/home/alice/out/a":                       "file://$OUT/a",
		`"text": "first\n/home/jdoe/secret.txt"`:                 `"text": "first\n[private]/secret.txt"`,
		"relative/path/out and ref-vlm-small and jdoe-tool":      "relative/path/out and ref-vlm-small and jdoe-tool",
		"$OUT/vlm and [private]/tmp and [host] and $HARNESS/bin": "$OUT/vlm and [private]/tmp and [host] and $HARNESS/bin",
	} {
		assert.Equal(t, want, s.Text(in), in)
		assert.Equal(t, s.Text(in), s.Text(s.Text(in)), "idempotent: %s", in)
	}
	// The payload of a data URL is data: a host name inside it by chance
	// stays. The same run of characters elsewhere is text (issue 32 item 7).
	blob := strings.Repeat("QUJD", 30) + "+gpu-node-17/" + strings.Repeat("QUJD", 30)
	assert.Equal(t, `"url": "data:image/png;base64,`+blob+`"`, s.Text(`"url": "data:image/png;base64,`+blob+`"`))
	assert.Equal(t, "image "+strings.Replace(blob, "gpu-node-17", verdict.MaskHost, 1), s.Text("image "+blob))
	// A run of path characters is never data, however long.
	long := "/home/jdoe/" + strings.Repeat("abcdefghij/", 12) + "model.bin"
	assert.Equal(t, "load [private]/model.bin", s.Text("load "+long))
	assert.Equal(t, "data:image/png;base64,[private]/model.bin", s.Text("data:image/png;base64,"+long), "a path where a payload starts")
}

// URL-encoded paths and names are found as raw ones are (issue 32 item 8).
func TestScrubberURLEncoded(t *testing.T) {
	s := testScrubber()
	for in, want := range map[string]string{
		"GET /open?file=%2Fhome%2Fjdoe%2Fsecret.txt&x=1":      "GET /open?file=[private]&x=1",
		"GET /open?file=%2fhome%2fjdoe%2fsecret.txt HTTP/1.1": "GET /open?file=[private] HTTP/1.1",
		"out=%2Ftmp%2Fpub%2Fhome%2Falice%2Fout%2Fvlm%2Fx":     "out=$OUT%2Fvlm%2Fx",
		"user=jdoe%40gpu-node-17&owner%3Djdoe":                "user=[user]%40[host]&owner%3D[user]",
		"progress 50%25 done, 100%":                           "progress 50%25 done, 100%",
		"route %2Fv1%2Finfer":                                 "route %2Fv1%2Finfer",
	} {
		assert.Equal(t, want, s.Text(in), in)
		assert.Equal(t, s.Text(in), s.Text(s.Text(in)), "idempotent: %s", in)
	}
}

// TestScrubberCommandIsExact: the published command, run in bash with the
// roots set to the original directories, is exactly the recorded argv; it
// runs nothing else, and no root's path is in it.
func TestScrubberCommandIsExact(t *testing.T) {
	s := testScrubber()
	argv := []string{"trtmc-qual", "--config", "/work/trtmc-qual/trtmc-qual.yaml", "--aiperf", "/work/trtmc-qual/.venv/bin/aiperf",
		"--families=/work/trtmc-qual/families/families.yaml", "run", "--group", "vlm", "--out", "/tmp/pub/home/alice/out",
		"--note", "/tmp/pub/home/alice/out/a b/$(touch PWNED)", "--only", "ref-vlm-small"}
	line := `TRTMC_SERVE_TOKEN="$TRTMC_SERVE_TOKEN" ` + text.ShellJoin(argv)
	pub := s.Command(line)
	for _, r := range s.Roots() {
		assert.NotContains(t, pub, r.Path)
	}
	assert.Contains(t, pub, `--out "$OUT"`)
	assert.Contains(t, pub, `--config "$HARNESS/trtmc-qual.yaml"`)
	assert.Contains(t, pub, `--families="$HARNESS/families/families.yaml"`)
	assert.True(t, strings.HasPrefix(pub, `TRTMC_SERVE_TOKEN="$TRTMC_SERVE_TOKEN" trtmc-qual `), pub)
	assert.Equal(t, pub, s.Command(pub), "idempotent")

	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	dir := t.TempDir()
	cmd := exec.Command(bash, "-c", `trtmc-qual() { printf '%s\0' trtmc-qual "$@"; }; `+pub)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OUT=/tmp/pub/home/alice/out", "HARNESS=/work/trtmc-qual", "AIPERF_VENV=/work/trtmc-qual/.venv")
	out, err := cmd.Output()
	require.NoError(t, err, pub)
	assert.Equal(t, argv, strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"))
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries, "pasting the command ran something")

	// A line that is not ShellJoin's is mapped as text, never dropped.
	assert.Equal(t, "echo $OUT; rm -rf [private]", s.Command("echo /tmp/pub/home/alice/out; rm -rf /home/jdoe"))
}

// TestPublicReport: the published formats of a report whose evidence
// holds absolute paths of a host, its name and user names show none of
// them; the exact formats keep them; Public is idempotent and a report
// survives its JSON round trip.
func TestPublicReport(t *testing.T) {
	root := copyTree(t, rootA)
	editResult(t, root, "vlm", "ref-vlm-small", func(m map[string]any) {
		m["command"] = text.ShellJoin([]string{"trtmc-qual", "--config", "/home/jdoe/trtmc-qual/trtmc-qual.yaml",
			"--aiperf", "/home/jdoe/trtmc-qual/.venv/bin/aiperf", "run", "--group", "vlm", "--out", "/scratch/jdoe/out"})
		prov := m["provenance"].(map[string]any)
		prov["host"] = "dgx-b7.corp.example"
		prov["bundle_path"] = "/mnt/bundles/ref-vlm-small.bundle"
		prov["roots"] = []any{map[string]any{"name": "TRTMC_REPO", "path": "/home/jdoe/src/trtmc"}}
		prov["native"] = map[string]any{"path": "worker", "timing_scope": "public_task_call_wall", "token_counts": true,
			"worker_binary":        "/opt/envs/trtmc/lib/python3.12/site-packages/tensorrt_model_connect/bin/trtmc-server",
			"worker_binary_source": "package"}
		m["problems"] = []any{map[string]any{"stage": "server", "code": "server_exit",
			"message": "server exited on dgx-b7; log /scratch/jdoe/out/vlm/ref-vlm-small/server.log, repo /home/jdoe/src/trtmc/build"}}
	})
	g, err := reports.Load([]string{root}, "vlm")
	require.NoError(t, err)
	pubOpts := Publisher{Identity: Identity{Users: []string{"jdoe"}}}
	g.Publisher = pubOpts
	for _, f := range []string{reports.FormatMarkdown, reports.FormatHTML} {
		out := string(render(t, g, f))
		for _, leak := range []string{"/home/jdoe", "/scratch/jdoe", "/mnt/bundles", "dgx-b7", "jdoe", root} {
			assert.NotContains(t, out, leak, f)
		}
	}
	md := string(render(t, g, reports.FormatMarkdown))
	assert.Contains(t, md, `--config "$HARNESS/trtmc-qual.yaml" --aiperf "$AIPERF_VENV/bin/aiperf" run --group vlm --out "$OUT"`)
	assert.Contains(t, md, `\$OUT/vlm/ref-vlm-small/server.log, repo \$TRTMC_REPO/build`, "a reason is Markdown text (markdown.Text)")
	// The native worker beside the installed package is named by its root
	// (export publishes provenance.native.worker_binary through it).
	assert.Equal(t, "$TRTMC_PACKAGE/bin/trtmc-server",
		pubOpts.Scrubber(g).Text("/opt/envs/trtmc/lib/python3.12/site-packages/tensorrt_model_connect/bin/trtmc-server"))
	assert.Contains(t, md, "Paths are relative to named roots; set them before running: $AIPERF_VENV the virtual environment holding bin/aiperf; $HARNESS the trtmc-qual checkout; $OUT ")
	var junit bytes.Buffer
	require.NoError(t, g.JUnit(&junit))
	assert.NotContains(t, junit.String(), "/scratch/jdoe")
	assert.Contains(t, junit.String(), `--out &#34;$OUT&#34;`)
	// The private formats keep the exact argv.
	assert.Contains(t, string(render(t, g, reports.FormatJSON)), "/scratch/jdoe/out")
	assert.Contains(t, string(render(t, g, reports.FormatCSV)), "/scratch/jdoe/out")

	pub, err := pubOpts.Public(g)
	require.NoError(t, err)
	again, err := pubOpts.Public(pub)
	require.NoError(t, err)
	assert.Equal(t, render(t, pub, reports.FormatJSON), render(t, again, reports.FormatJSON))

	// Nothing to map: the public copy renders exactly like the original.
	plain, err := reports.Load([]string{rootA}, "vlm")
	require.NoError(t, err)
	cp, err := plain.Mapped(NewScrubber(nil, Identity{}))
	require.NoError(t, err)
	assert.Equal(t, string(render(t, plain, reports.FormatJSON)), string(render(t, cp, reports.FormatJSON)))
}

// FuzzScrubberText: mapping is idempotent, and outside base64 data no
// root's path and no host name survives it.
func FuzzScrubberText(f *testing.F) {
	for _, s := range []string{"/tmp/pub/home/alice/out/x", "on gpu-node-17 at 10.1.2.3", "file:///work/trtmc-qual/a b",
		`"\n/home/jdoe/x"`, "$OUT/x [private]/y [host]", "a:/data/src/TensorRT-Model-Connect:/opt/x"} {
		f.Add(s)
	}
	s := testScrubber()
	f.Fuzz(func(t *testing.T, in string) {
		out := s.Text(in)
		if again := s.Text(out); again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, out, again)
		}
		for i := 0; i < len(out); i++ {
			if InData(out, i) {
				return // a data URL's payload is data: not scanned, by design
			}
		}
		s.Spans(out, func(sp Span) {
			if sp.Kind == FindRoot || sp.Kind == FindHost {
				t.Fatalf("%s %q left in %q (from %q)", sp.Kind, out[sp.Start:sp.End], out, in)
			}
		})
	})
}

// A path under a top-level directory only the run host has (/check on a
// CI node), or the run's user name, is that host's wherever the report is
// rendered later: the row records the host's entries of / and its users,
// and the scrubber uses them.
func TestPublicReportUsesTheRunHostsTopDirs(t *testing.T) {
	const leak = "/check/node7/trtmc-qual/qual/testdata/fakebin/fake-aiperf"
	render := func(topDirs []any) string {
		root := copyTree(t, rootA)
		editResult(t, root, "vlm", "ref-vlm-small", func(m map[string]any) {
			m["command"] = text.ShellJoin([]string{"trtmc-qual", "--aiperf", leak, "run", "--group", "vlm"})
			m["problems"] = []any{map[string]any{"stage": "aiperf", "code": "aiperf_exit",
				"message": "exec " + leak + ": exit 1 (owner jqpublic)"}}
			if topDirs != nil {
				prov := m["provenance"].(map[string]any)
				prov["host_top_dirs"], prov["host_users"] = topDirs, []any{"jqpublic", "root"}
			}
		})
		g, err := reports.Load([]string{root}, "vlm")
		require.NoError(t, err)
		g.Publisher = Publisher{}
		var buf bytes.Buffer
		require.NoError(t, reports.Render(&buf, g, reports.FormatMarkdown))
		if topDirs != nil {
			// The published row holds the recorded users masked.
			pub, err := Publisher{}.Public(g)
			require.NoError(t, err)
			found := false
			for _, row := range pub.Rows {
				if row.Profile == "ref-vlm-small" {
					found = true
					assert.Equal(t, []string{verdict.MaskUser, "root"}, row.Result.Provenance.HostUsers)
				}
			}
			assert.True(t, found, "the edited row is in the report")
		}
		return buf.String()
	}
	// Without the record, a directory no host list names stays as it is
	// (which is why every row records it).
	before := render(nil)
	assert.Contains(t, before, leak)
	assert.Contains(t, before, "owner jqpublic")
	md := render([]any{"bin", "check", "usr"})
	assert.NotContains(t, md, "/check")
	assert.NotContains(t, md, "node7")
	assert.NotContains(t, md, "jqpublic")
	assert.Contains(t, md, "--aiperf '[private]/fake-aiperf' run --group vlm")
	assert.Contains(t, md, `exec \[private\]/fake-aiperf: exit 1 (owner \[user\])`, "a reason is Markdown text (markdown.Text)")
}

package gitread

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// Every git the harness runs in a foreign checkout (reconcile, drift, ci
// through CLI; doctor through Args) runs none of the checkout's commands
// (issue 25, item 14): fsmonitor, hooks, filters, diff drivers, pager.
func TestCLIRunsNoCommandOfTheRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo, pwned := t.TempDir(), t.TempDir()
	gitIn(t, repo, "init", "-q")
	if err := os.MkdirAll(filepath.Join(repo, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"m/a.toml": "a = 1\n", ".gitattributes": "* filter=evil diff=evil\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "one")
	if err := os.WriteFile(filepath.Join(repo, "m/a.toml"), []byte("a = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "commit", "-q", "-am", "two")
	touch := func(what string) string { return "sh -c 'touch " + filepath.Join(pwned, "PWNED-"+what) + "; cat'" }
	for k, v := range map[string]string{"core.fsmonitor": touch("fsmonitor"), "filter.evil.clean": touch("clean"),
		"filter.evil.smudge": touch("smudge"), "diff.evil.textconv": touch("textconv"), "diff.external": touch("external"),
		"core.pager": touch("pager"), "core.hooksPath": pwned} {
		gitIn(t, repo, "config", k, v)
	}
	ctx := context.Background()
	g := CLI{Repo: repo}
	head, err := g.Commit(ctx, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	base, err := g.Commit(ctx, "HEAD~1")
	if err != nil {
		t.Fatal(err)
	}
	if files, err := g.ListFiles(ctx, head, "m"); err != nil || len(files) != 1 {
		t.Fatalf("ListFiles: %v %v", files, err)
	}
	if got, err := g.ReadFiles(ctx, head, []string{"m/a.toml"}); err != nil || string(got["m/a.toml"]) != "a = 2\n" {
		t.Fatalf("ReadFiles: %q %v", got, err)
	}
	if ch, err := g.Diff(ctx, base, head, []string{"m"}); err != nil || len(ch) != 1 || ch[0].Added != 1 {
		t.Fatalf("Diff: %+v %v", ch, err)
	}
	if out, err := exec.Command("git", Args("git", repo, nil, DriverConfigArgs...)[1:]...).Output(); err != nil {
		t.Fatal(err)
	} else if got := DriverOverrides(out); len(got) != 3 {
		t.Fatalf("DriverOverrides: %q", got)
	}
	left, _ := filepath.Glob(filepath.Join(pwned, "PWNED-*"))
	if len(left) > 0 {
		t.Fatalf("a command of the repository ran: %v", left)
	}
}

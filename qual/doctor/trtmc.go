package doctor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/families/trtmc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// The TRTMC contract, checked without a GPU (area "trtmc"): which
// trtmc-server the console script on PATH is and whether its --help lists
// every flag the families pass; where the native worker is (found as the
// control plane finds it, families/trtmc LocateWorker); the TRTMC
// interpreter's version (pyproject.toml idx@05348945: >= 3.12); and whether
// the checkout's commit has the server at all (it arrives with PR #1292:
// e9132e79 has no apps/ tree). Each problem names its fix.

// serverDir is where TRTMC's server sources live once PR #1292 is in.
const serverDir = "apps/server/python/trtmc_server"

// trtmcFamilies are the used families whose server is trtmc-server or whose
// native runner is the TRTMC adapter.
func trtmcFamilies(o Options, used map[string]bool) (server, native []*families.Family) {
	for _, name := range slices.Sorted(mapKeys(used)) {
		f := o.Families.Families[name]
		if f == nil {
			continue
		}
		if len(f.Server) > 0 && filepath.Base(f.Server[0]) == "trtmc-server" {
			server = append(server, f)
		}
		if len(f.Native) > 3 && f.Native[1] == "adapter" && f.Native[2] == "native" && argAfter(f.Native, "--path", trtmc.PathWorker) == trtmc.PathWorker {
			native = append(native, f)
		}
	}
	return server, native
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// argAfter is the value after flag in argv, or def.
func argAfter(argv []string, flag, def string) string {
	for i, a := range argv {
		if a == flag && i+1 < len(argv) {
			return argv[i+1]
		}
	}
	return def
}

func (o Options) getenv(k string) string {
	if o.Getenv == nil {
		return ""
	}
	return o.Getenv(k)
}

func (o Options) repo() string {
	if o.Repo != "" {
		return o.Repo
	}
	return o.getenv("TRTMC_REPO")
}

// locate is how the native adapter looks for the worker on this host.
func (o Options) locate() trtmc.LocateOptions {
	l := trtmc.LocateOptions{Explicit: o.getenv("TRTMC_WORKER_BINARY"), ExplicitFrom: trtmc.WorkerFromEnv,
		Python: o.getenv("TRTMC_PYTHON"), Repo: o.repo(), Runner: o.Runner, LookPath: o.LookPath}
	return l
}

func checkTRTMC(ctx context.Context, o Options, used map[string]bool, add func(Check)) {
	server, native := trtmcFamilies(o, used)
	if len(server) == 0 && len(native) == 0 {
		return
	}
	var python string
	if len(server) > 0 {
		python = checkConsoleScript(ctx, o, server, add)
	}
	if len(native) > 0 {
		if w, err := trtmc.LocateWorker(ctx, o.locate()); err != nil {
			add(Check{Area: "trtmc", Subject: "native worker", Status: StatusFail, Detail: err.Error(),
				Fix: "install TRTMC from its checkout into the TRTMC interpreter (pip install '.[serve]'), or set TRTMC_WORKER_BINARY to the native trtmc-server binary"})
		} else {
			detail := fmt.Sprintf("%s (%s), sha256 %s", w.Path, w.Source, short(w.SHA256))
			if w.RuntimeRoot != "" {
				detail += ", runtime root " + w.RuntimeRoot
			}
			add(Check{Area: "trtmc", Subject: "native worker", Status: StatusOK, Detail: detail})
		}
	}
	if p := o.getenv("TRTMC_PYTHON"); p != "" {
		python = p
	}
	if python == "" {
		python = "python3"
	}
	switch py, err := trtmc.ProbePython(ctx, o.Runner, python); {
	case err != nil:
		add(Check{Area: "trtmc", Subject: "interpreter", Status: StatusFail, Detail: err.Error(),
			Fix: "create TRTMC's environment with Python 3.12 (python3.12 -m venv ...) and set TRTMC_PYTHON to its interpreter"})
	case !py.AtLeast(trtmc.MinPython):
		add(Check{Area: "trtmc", Subject: "interpreter", Status: StatusFail,
			Detail: fmt.Sprintf("%s is Python %s; TRTMC requires >= %d.%d (pyproject.toml requires-python)", py.Executable, py.VersionString(), trtmc.MinPython[0], trtmc.MinPython[1]),
			Fix:    "install TRTMC into a Python 3.12 environment (python3.12 -m venv ...; pip install '.[serve]' from the checkout) and set TRTMC_PYTHON"})
	case py.ImportError != "":
		add(Check{Area: "trtmc", Subject: "interpreter", Status: StatusFail,
			Detail: fmt.Sprintf("%s (Python %s) does not import tensorrt_model_connect: %s", py.Executable, py.VersionString(), py.ImportError),
			Fix:    "TRTMC is not on the public package index: pip install '.[serve]' from its checkout into this interpreter, or set TRTMC_PYTHON to the one it is installed in"})
	default:
		add(Check{Area: "trtmc", Subject: "interpreter", Status: StatusOK,
			Detail: fmt.Sprintf("%s: Python %s, tensorrt_model_connect at %s", py.Executable, py.VersionString(), py.PackageDir)})
	}
	checkServerCommit(ctx, o, add)
}

// checkConsoleScript: trtmc-server on PATH, what it is, and its --help. It
// returns the interpreter a console script names, if it is a Python one.
func checkConsoleScript(ctx context.Context, o Options, server []*families.Family, add func(Check)) string {
	path, err := o.LookPath("trtmc-server")
	if err != nil {
		return "" // the executable check names it, with its fix
	}
	kind, python := serverKind(path)
	var out bytes.Buffer
	hctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, herr := o.Runner.Run(hctx, proc.Spec{Name: "trtmc-server --help", Argv: []string{path, "--help"}, Stdout: &out, Stderr: &out})
	if herr != nil {
		add(Check{Area: "trtmc", Subject: "trtmc-server", Status: StatusFail, Detail: fmt.Sprintf("%s (%s): --help failed: %s", path, kind, text.FirstLine(herr.Error())),
			Fix: "reinstall TRTMC's serve extra (pip install '.[serve]' from the checkout): fastapi, pydantic, uvicorn"})
		return python
	}
	help := out.String()
	var missing []string
	users := map[string][]string{}
	for _, f := range server {
		for _, a := range f.Server[1:] {
			if strings.HasPrefix(a, "--") {
				flag, _, _ := strings.Cut(a, "=")
				if !helpLists(help, flag) && !slices.Contains(missing, flag) {
					missing = append(missing, flag)
				}
				if !slices.Contains(users[flag], f.Name) {
					users[flag] = append(users[flag], f.Name)
				}
			}
		}
	}
	if len(missing) > 0 {
		var parts []string
		for _, m := range missing {
			parts = append(parts, fmt.Sprintf("%s (passed by %s)", m, strings.Join(users[m], ", ")))
		}
		fix := "use a TRTMC server version whose CLI has these flags"
		if slices.Contains(missing, "--records") {
			fix = "this server cannot write request records (idx@ddf1735f and idx@05348945 have no --records): qualify with a server that has it (apps/server/python/trtmc_server/cli.py at idx@a9ed5f69 or later), or change the families' server argv deliberately"
		}
		add(Check{Area: "trtmc", Subject: "trtmc-server", Status: StatusFail,
			Detail: fmt.Sprintf("%s (%s): its --help lists no %s", path, kind, strings.Join(parts, ", ")), Fix: fix})
		return python
	}
	add(Check{Area: "trtmc", Subject: "trtmc-server", Status: StatusOK,
		Detail: fmt.Sprintf("%s (%s); its --help lists every flag the families pass", path, kind)})
	return python
}

// serverKind says which install form trtmc-server on PATH is, and the
// interpreter its control plane runs on ("" when that is PATH's python3):
// the wheel's console script (a script naming its Python), a source
// build's launcher (the native binary with build/server/python beside it:
// main.cpp frontend_main runs `python3 -P -m trtmc_server ... --worker-binary
// <itself>`, python3 from PATH), or a native binary without it (which runs
// <its dir>/python3, else python3, with -I).
func serverKind(path string) (kind, python string) {
	if interp := shebang(path); interp != "" {
		if strings.HasPrefix(filepath.Base(interp), "python") {
			python = interp
		}
		return "the console script of " + interp, python
	}
	if trtmc.IsLauncher(path) {
		return "a source build's launcher: the native binary, which starts python3 -P -m trtmc_server from " +
			filepath.Join(filepath.Dir(path), "server", "python") + " with itself as the worker (apps/server/main.cpp)", ""
	}
	return "a native binary without server/python beside it: it starts the control plane installed for python3 -I (apps/server/main.cpp)", ""
}

// helpLists reports whether argparse help text names a flag.
func helpLists(help, flag string) bool {
	return regexp.MustCompile(`(^|[\s\[,])` + regexp.QuoteMeta(flag) + `([\s=\],]|$)`).MatchString(help)
}

// shebang is a script's interpreter ("" for a binary).
func shebang(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	if !strings.HasPrefix(line, "#!") {
		return ""
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) == "env" && len(fields) > 1 {
		return fields[1]
	}
	return fields[0]
}

// checkServerCommit warns when the checkout's commit has no server: the
// programs on this node were then not built from it.
func checkServerCommit(ctx context.Context, o Options, add func(Check)) {
	repo := o.repo()
	if repo == "" {
		return
	}
	g := gitread.CLI{Repo: repo}
	commit, err := g.Commit(ctx, "HEAD")
	if err != nil {
		return // the repo check names it
	}
	files, err := g.ListFiles(ctx, commit, serverDir)
	if err != nil || len(files) == 0 {
		add(Check{Area: "trtmc", Subject: "server at commit", Status: StatusWarn,
			Detail: fmt.Sprintf("commit %s has no %s: TRTMC's server arrives with PR #1292 (e9132e79, the public snapshot, has no apps/ tree), so the trtmc-server on this node was not built from the commit being qualified", short(commit), serverDir),
			Fix:    "check out a commit at or after the merge of PR #1292 and install TRTMC from it"})
		return
	}
	add(Check{Area: "trtmc", Subject: "server at commit", Status: StatusOK, Detail: fmt.Sprintf("commit %s has %s", short(commit), serverDir)})
}

// checkRequestSizes holds each group's corpus to the two size limits of
// every family that declares one, as the run's preflight will: an entry
// whose request is over either would be refused (exit 3). The detail
// names both limits.
func checkRequestSizes(o Options, groups []string, add func(Check)) {
	for _, gn := range groups {
		g := o.Inventory.Groups[gn]
		done := map[string]bool{}
		for _, p := range g.Profiles {
			f := o.Families.Families[p.Family]
			if p.Exclusion != nil || f == nil || (f.MaxBodyBytes <= 0 && f.MaxPromptBytes <= 0) || done[f.Name] {
				continue
			}
			done[f.Name] = true
			entries, err := aiperf.LoadCorpus(inventory.ResolvePath(g.File, g.Workload.Dataset.Corpus))
			if err != nil {
				return // the corpus check names it
			}
			subject := gn + " corpus for " + f.Name
			sizes, err := qual.CheckRequestLimits(f, g.Workload.EndpointType, entries, p.Served(), g.Workload.Generation)
			if err != nil {
				add(Check{Area: "corpus", Subject: subject, Status: StatusFail, Detail: err.Error(),
					Fix: fmt.Sprintf("use a smaller image or question for that entry, or raise family %s's max_body_bytes / max_prompt_bytes (the worker's line limit is 16 MiB)", f.Name)})
				continue
			}
			add(Check{Area: "corpus", Subject: subject, Status: StatusOK, Detail: sizes.String()})
		}
	}
}

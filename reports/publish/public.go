package publish

import (
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// What a release engineer publishes — the Markdown and HTML reports, the
// docs block, JUnit, the completion summary, an evidence pack — must hold
// no path, host or user name of the run host. Commands in it are written
// relative to named roots ($OUT, $HARNESS, $TRTMC_REPO, ...), so that they
// stay exact: set the roots on another machine and the command runs there.
// The private evidence (result.json, manifest.json, the CSV and JSON
// reports, the terminal table) keeps the exact argv.
//
// A Scrubber does the mapping, and one scan (spans) finds what it maps:
//
//   - a root's path, at path boundaries, becomes $NAME;
//   - any other absolute path of a host (its first directory one of the
//     top-level directories a host has: /home, /tmp, /data, ... or one this
//     host has) becomes [private]/BASENAME;
//   - a host name of the run (its short and full names) becomes [host];
//   - a user name (the run's users, and every NAME of /home/NAME or
//     /Users/NAME in a root's path) becomes [user], unless it is a generic
//     account name (root, runner, ...), which names nobody;
//   - an IP address other than loopback becomes [ip].
//
// Paths, host and user names are found raw and URL-encoded (a path
// %2Fhome%2Falice%2Fx, a name after %40 or %3D); the leak scanner
// (LeakScanner) looks for them in every other encoding too, and refuses
// what the scrubber could not map.
//
// Only proven data is exempt: the base64 payload of a data URL
// (data:image/png;base64,...), an image inside a request, is never scanned
// for names, since a two-letter host name occurs in it by chance. A run of
// path characters is never data, however long: a path where a payload
// should start is still a path.
// Text is idempotent: what it wrote maps to itself.

// Names of the roots the harness knows. Others can be declared (--root
// NAME=DIR).
const (
	RootOut        = "OUT"         // the evidence root (run --out, report --from)
	RootHarness    = "HARNESS"     // the trtmc-qual checkout (its config file, inventory, families, bin/)
	RootTRTMC      = "TRTMC_REPO"  // the TRTMC checkout the correctness cases run in
	RootBundles    = "BUNDLE_DIR"  // a directory of served bundles
	RootAIPerfVenv = "AIPERF_VENV" // the virtual environment of the aiperf executable
	RootTokenizer  = "TOKENIZER"   // the tokenizer directory AIPerf counted with
	// RootTRTMCPackage is the installed tensorrt_model_connect package whose
	// bin/trtmc-server answered as the native worker (TRTMC's wheel layout).
	RootTRTMCPackage = "TRTMC_PACKAGE"
)

// RootDescriptions says what each known root is, for the reports' notes.
func RootDescriptions() map[string]string {
	return map[string]string{
		RootOut:          "the evidence root, or the extracted evidence pack",
		RootHarness:      "the trtmc-qual checkout",
		RootTRTMC:        "the TRTMC checkout",
		RootBundles:      "the directory of the served bundle",
		RootAIPerfVenv:   "the virtual environment holding bin/aiperf",
		RootTokenizer:    "the tokenizer directory",
		RootTRTMCPackage: "the installed tensorrt_model_connect package (its bin/trtmc-server is the native worker)",
	}
}

var rootNameRe = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// CheckRoot checks a root: an upper-case shell variable name and an
// absolute path other than /.
func CheckRoot(r verdict.Root) error {
	if !rootNameRe.MatchString(r.Name) {
		return fmt.Errorf("root name %q: want an upper-case shell variable name (A-Z, 0-9, _; not starting with a digit)", r.Name)
	}
	if !filepath.IsAbs(r.Path) || filepath.Clean(r.Path) == "/" {
		return fmt.Errorf("root %s=%q: want an absolute directory other than /", r.Name, r.Path)
	}
	return nil
}

// ParseRoot reads NAME=DIR (DIR made absolute).
func ParseRoot(s string) (verdict.Root, error) {
	name, path, ok := strings.Cut(s, "=")
	if !ok || path == "" {
		return verdict.Root{}, fmt.Errorf("root %q: want NAME=DIR", s)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	r := verdict.Root{Name: name, Path: filepath.Clean(path)}
	return r, CheckRoot(r)
}

// Identity is what names a host and its users: host names, user and home
// directory names, and the host's top-level directories (entries of /).
type Identity struct {
	Hosts   []string
	Users   []string
	TopDirs []string
}

// Publisher publishes reports (reports.Publisher: set it as a report's
// Publisher): it knows what the caller knows beyond the evidence — roots
// declared on the command line or in the environment, and the identity of
// the host the report is written on (ForHost) — and makes the public copy
// (Public) with the report's Scrubber.
type Publisher struct {
	Roots    []verdict.Root
	Identity Identity
}

// commonTopDirs are first directories of absolute paths on the hosts
// trtmc-qual runs on (Linux, macOS, clusters). A host's own entries of /
// are added by the caller.
var commonTopDirs = []string{"home", "Users", "root", "tmp", "var", "opt", "usr", "mnt", "media", "srv", "data",
	"scratch", "work", "workspace", "workspaces", "lustre", "gpfs", "nfs", "shared", "private", "Volumes", "etc",
	"proc", "dev", "run", "lib", "lib64", "bin", "sbin", "boot", "snap", "sys", "net", "raid", "local", "projects",
	"cluster", "export", "scratch1", "scratch2", "fsx", "efs", "nvme", "ssd", "datasets", "models", "checkpoints"}

// genericNames are account or host names that name nobody: they are never
// scrubbed as words (a path holding them is still a path).
var genericNames = []string{"root", "runner", "user", "users", "admin", "ubuntu", "ec2-user", "nobody", "build",
	"builder", "ci", "jenkins", "daemon", "www-data", "vagrant", "docker", "worker", "test", "circleci",
	"gitlab-runner", "github", "host", "ip", "private", "home", "localhost", "localhost.localdomain", "trtmc",
	"trtmc-qual", "aiperf", "server", "node", "master", "main", "gpu", "cpu", "box", "debian", "fedora", "centos",
	"alpine", "linux", "workstation", "desktop", "laptop", "default", "none", "unknown"}

// Scrubber maps the text of one host's evidence to publishable text.
type Scrubber struct {
	roots []scrubRoot // longest path first
	names map[string]bool
	words []scrubWord // host and user names, longest first
	top   map[string]bool
}

type scrubRoot struct {
	verdict.Root
	rank int // lower wins among roots of the same path
}

type scrubWord struct {
	text string
	kind string
	fold bool // host names compare case-insensitively
}

// Kinds of what a scan finds.
const (
	FindRoot = "root path"
	FindPath = "absolute path outside the named roots"
	FindHost = "host name"
	FindUser = "user name"
	FindIP   = "IP address"
)

// NewScrubber maps the given roots (in order of precedence: the first of
// two roots with the same path names it) and identity.
func NewScrubber(roots []verdict.Root, id Identity) *Scrubber {
	s := &Scrubber{names: map[string]bool{}, top: map[string]bool{}}
	for k := range RootDescriptions() {
		s.names[k] = true
	}
	seen := map[string]bool{}
	var users []string
	for i, r := range roots {
		if rootNameRe.MatchString(r.Name) {
			// Known by name even without a path here (a published row
			// records {"name": "X", "path": "$X"}): "$X/rest" is a path.
			s.names[r.Name] = true
		}
		r.Path = filepath.Clean(r.Path)
		if CheckRoot(r) != nil {
			continue
		}
		if !seen[r.Path] {
			seen[r.Path] = true
			s.roots = append(s.roots, scrubRoot{r, i})
		}
		users = append(users, homeNames(r.Path)...)
	}
	sort.SliceStable(s.roots, func(i, j int) bool {
		if len(s.roots[i].Path) != len(s.roots[j].Path) {
			return len(s.roots[i].Path) > len(s.roots[j].Path)
		}
		return s.roots[i].rank < s.roots[j].rank
	})
	for _, d := range append(slices.Clone(commonTopDirs), id.TopDirs...) {
		if d != "" && !strings.ContainsAny(d, "/\x00") {
			s.top[d] = true
		}
	}
	for _, r := range s.roots {
		if first, _, _ := strings.Cut(strings.TrimPrefix(r.Path, "/"), "/"); first != "" {
			s.top[first] = true
		}
	}
	words := map[string]scrubWord{}
	add := func(w, kind string, fold bool) {
		w = strings.TrimSpace(w)
		if len(w) < 2 || !wordish(w) || slices.Contains(genericNames, strings.ToLower(w)) {
			return
		}
		key := w
		if fold {
			key = strings.ToLower(w)
		}
		if _, ok := words[key]; !ok {
			words[key] = scrubWord{text: w, kind: kind, fold: fold}
		}
	}
	for _, h := range id.Hosts {
		add(h, FindHost, true)
		if short, _, ok := strings.Cut(h, "."); ok {
			add(short, FindHost, true)
		}
	}
	for _, u := range append(users, id.Users...) {
		add(u, FindUser, false)
	}
	for _, w := range words {
		s.words = append(s.words, w)
	}
	sort.Slice(s.words, func(i, j int) bool {
		if len(s.words[i].text) != len(s.words[j].text) {
			return len(s.words[i].text) > len(s.words[j].text)
		}
		return s.words[i].text < s.words[j].text
	})
	return s
}

// Roots are the scrubber's roots, sorted by name then path.
func (s *Scrubber) Roots() []verdict.Root {
	out := make([]verdict.Root, 0, len(s.roots))
	for _, r := range s.roots {
		out = append(out, r.Root)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Path < out[j].Path
	})
	return out
}

// RootDescription says what a root the harness knows is ("" for another).
func (s *Scrubber) RootDescription(name string) string { return RootDescriptions()[name] }

// IsRootName reports whether $name is one of the scrubber's roots (or a
// root the harness knows): "$OUT/x" in scrubbed evidence is a path.
func (s *Scrubber) IsRootName(name string) bool { return s.names[name] }

// homeNames are the user names a path shows: NAME of /home/NAME and
// /Users/NAME.
func homeNames(path string) []string {
	var out []string
	parts := strings.Split(path, "/")
	for i := 0; i+1 < len(parts); i++ {
		if (parts[i] == "home" || parts[i] == "Users") && parts[i+1] != "" {
			out = append(out, parts[i+1])
		}
	}
	return out
}

func wordish(w string) bool {
	for i := 0; i < len(w); i++ {
		if !isWordByte(w[i]) && w[i] != '.' {
			return false
		}
	}
	return true
}

// Span is one thing a scan found in a text.
type Span struct {
	Start, End int
	Kind       string
	// Root is the root's name (Kind FindRoot).
	Root string
}

// dataMin is the shortest base64 payload of a data URL that is data: a
// shorter one is scanned like any text.
const dataMin = 16

// dataPayload finds the payload of a data URL whose "data:" starts at
// text[i] (data:[MIME][;PARAM=V]*;base64,PAYLOAD): the start and end of
// its run of base64 characters. Only such a payload is data.
func dataPayload(text string, i int) (start, end int, ok bool) {
	if !strings.HasPrefix(text[i:], "data:") {
		return 0, 0, false
	}
	j := i + len("data:")
	for j < len(text) && j-i < 256 && (isWordByte(text[j]) || strings.IndexByte("/+.;=", text[j]) >= 0) {
		j++
	}
	if j >= len(text) || text[j] != ',' || !strings.HasSuffix(text[i:j], ";base64") {
		return 0, 0, false
	}
	start = j + 1
	end = start
	for end < len(text) && isB64Byte(text[end]) {
		end++
	}
	return start, end, end-start >= dataMin
}

// InData reports whether text[i] lies in the base64 payload of a data URL
// (an image inside a request), which Spans never scans for names.
func InData(text string, i int) bool {
	if i < 0 || i >= len(text) || !isB64Byte(text[i]) {
		return false
	}
	lo := i
	for lo > 0 && isB64Byte(text[lo-1]) {
		lo--
	}
	if lo == 0 || text[lo-1] != ',' {
		return false
	}
	d := strings.LastIndex(text[max(0, lo-256):lo], "data:")
	if d < 0 {
		return false
	}
	start, end, ok := dataPayload(text, max(0, lo-256)+d)
	return ok && start == lo && i < end
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func isB64Byte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

// isPathByte: what a path token is made of.
func isPathByte(c byte) bool {
	return c > ' ' && c != 0x7f && strings.IndexByte("\"'`<>|;,()[]{}:\\*?", c) < 0
}

// pathStart reports whether an absolute path can start at text[i] ('/',
// or the %2F of a URL-encoded one).
func pathStart(text string, i int) bool {
	if i == 0 {
		return true
	}
	p := text[i-1]
	switch {
	case strings.IndexByte(" \t\r\n\"'=(,[{:;`|@&?", p) >= 0:
		return true
	case p == '/':
		return strings.HasSuffix(text[:i], "://") // file:///path
	case i >= 2 && text[i-2] == '\\' && (p == 'n' || p == 't' || p == 'r'):
		return true // after a \n escape in JSON text
	}
	return false
}

// pathEnd reports whether a path may end before text[j].
func pathEnd(text string, j int) bool {
	return j >= len(text) || !(isWordByte(text[j]) || text[j] == '.')
}

// Spans calls fn for every root path, private path, host and user name
// and IP address in text, left to right, never overlapping.
func (s *Scrubber) Spans(text string, fn func(Span)) {
	n := len(text)
	for i := 0; i < n; {
		c := text[i]
		// The payload of a data URL is data; a path where it should start
		// is a path.
		if c == 'd' {
			if next, ok := s.dataAt(text, i, fn); ok {
				i = next
				continue
			}
		}
		if (c == '/' || encodedSlash(text, i)) && pathStart(text, i) {
			if sp, ok := s.pathAt(text, i); ok {
				fn(sp)
				i = sp.End
				continue
			}
		}
		if c == '$' && i+1 < n {
			// $NAME/...: already relative to a root; skip the name.
			j := i + 1
			for j < n && (isWordByte(text[j]) && text[j] != '-') {
				j++
			}
			if j > i+1 && s.names[text[i+1:j]] {
				i = j
				continue
			}
		}
		if c == '%' && escapeAt(text, i) {
			i += 3 // %XX: a word may start after it
			continue
		}
		if (isWordByte(c) || c == ':') && (i == 0 || !isWordByte(text[i-1]) && text[i-1] != '.' && text[i-1] != ':' || afterEscape(text, i)) {
			if end, ok := ipAt(text, i); ok {
				fn(Span{Start: i, End: end, Kind: FindIP})
				i = end
				continue
			}
			if isWordByte(c) {
				if sp, ok := s.wordAt(text, i); ok {
					fn(sp)
					i = sp.End
					continue
				}
				j := i
				for j < n && isWordByte(text[j]) {
					j++
				}
				i = j
				continue
			}
		}
		i++
	}
}

// dataAt skips a data URL starting at text[i] and returns where to go on:
// its payload is data, but a path where the payload should start is a
// path (reported to fn).
func (s *Scrubber) dataAt(text string, i int, fn func(Span)) (int, bool) {
	start, end, ok := dataPayload(text, i)
	if !ok {
		return 0, false
	}
	if sp, ok := s.pathAt(text, start); ok {
		fn(sp)
		return sp.End, true
	}
	return end, true
}

// escapeAt reports whether text[i:] starts with a %XX escape.
func escapeAt(text string, i int) bool {
	return i+2 < len(text) && text[i] == '%' && isHex(text[i+1]) && isHex(text[i+2])
}

// afterEscape reports whether text[i] follows a %XX escape.
func afterEscape(text string, i int) bool { return i >= 3 && escapeAt(text, i-3) }

// encodedSlash reports whether text[i:] starts with %2F (any case).
func encodedSlash(text string, i int) bool {
	return i+2 < len(text) && text[i] == '%' && text[i+1] == '2' && (text[i+2] == 'F' || text[i+2] == 'f')
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// encodedPathAt finds a URL-encoded absolute path starting at text[i]
// (%2F...): it is decoded as far as its bytes are path bytes, and found
// as a raw one would be; a root's path becomes a FindRoot span over its
// encoded form.
func (s *Scrubber) encodedPathAt(text string, i int) (Span, bool) {
	var dec []byte
	var at []int // at[k]: where decoded byte k starts in text
	j := i
	for j < len(text) {
		b, w := text[j], 1
		if escapeAt(text, j) {
			b, w = unhex(text[j+1])<<4|unhex(text[j+2]), 3
		} else if b == '%' || b == '&' || b == '?' || b == '#' {
			break
		}
		if !isPathByte(b) && b != '/' {
			break
		}
		dec, at = append(dec, b), append(at, j)
		j += w
	}
	at = append(at, j)
	d := string(dec)
	for _, r := range s.roots {
		if strings.HasPrefix(d, r.Path) && (len(d) == len(r.Path) || d[len(r.Path)] == '/') {
			return Span{Start: i, End: at[len(r.Path)], Kind: FindRoot, Root: r.Name}, true
		}
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(d, "/"), "/")
	if first != "" && s.top[first] {
		return Span{Start: i, End: j, Kind: FindPath}, true
	}
	return Span{}, false
}

func (s *Scrubber) pathAt(text string, i int) (Span, bool) {
	if encodedSlash(text, i) {
		return s.encodedPathAt(text, i)
	}
	if i >= len(text) || text[i] != '/' {
		return Span{}, false
	}
	for _, r := range s.roots {
		if strings.HasPrefix(text[i:], r.Path) && pathEnd(text, i+len(r.Path)) {
			return Span{Start: i, End: i + len(r.Path), Kind: FindRoot, Root: r.Name}, true
		}
	}
	j := i + 1
	for j < len(text) && isPathByte(text[j]) {
		j++
	}
	first, _, _ := strings.Cut(text[i+1:j], "/")
	if first != "" && s.top[first] {
		return Span{Start: i, End: j, Kind: FindPath}, true
	}
	return Span{}, false
}

func (s *Scrubber) wordAt(text string, i int) (Span, bool) {
	for _, w := range s.words {
		end := i + len(w.text)
		if end > len(text) {
			continue
		}
		got := text[i:end]
		if (got == w.text || w.fold && strings.EqualFold(got, w.text)) && (end == len(text) || !isWordByte(text[end])) {
			return Span{Start: i, End: end, Kind: w.kind}, true
		}
	}
	return Span{}, false
}

// ipAt finds an IP address other than loopback or unspecified starting
// at text[i]; a version number after ==, >=, <= or ~= is not one.
func ipAt(text string, i int) (int, bool) {
	j := i
	for j < len(text) && (text[j] >= '0' && text[j] <= '9' || text[j] == '.' || text[j] == ':' ||
		text[j] >= 'a' && text[j] <= 'f' || text[j] >= 'A' && text[j] <= 'F') {
		j++
	}
	if j < len(text) && (isWordByte(text[j])) {
		return 0, false
	}
	cand := strings.TrimRight(text[i:j], ".:")
	if cand == "" {
		return 0, false
	}
	if i >= 2 && strings.Contains("== >= <= ~=", text[i-2:i]) && text[i-1] == '=' {
		return 0, false
	}
	var ip net.IP
	if strings.Count(cand, ":") >= 2 {
		if !strings.Contains(cand, "::") && strings.Count(cand, ":") != 7 {
			return 0, false
		}
		ip = net.ParseIP(cand)
	} else {
		// IPv4, possibly followed by :port.
		host, _, _ := strings.Cut(cand, ":")
		if strings.Count(host, ".") != 3 {
			return 0, false
		}
		ip = net.ParseIP(host)
		if ip != nil {
			cand = host
		}
	}
	if ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
		return 0, false
	}
	return i + len(cand), true
}

// Text maps text for publication (see Scrubber).
func (s *Scrubber) Text(text string) string {
	if s == nil {
		return text
	}
	var b strings.Builder
	last := 0
	s.Spans(text, func(sp Span) {
		b.WriteString(text[last:sp.Start])
		b.WriteString(s.mask(text[sp.Start:sp.End], sp))
		last = sp.End
	})
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

func (s *Scrubber) mask(found string, sp Span) string {
	switch sp.Kind {
	case FindRoot:
		return "$" + sp.Root
	case FindPath:
		base := found[strings.LastIndexByte(found, '/')+1:]
		clean := true
		s.Spans(base, func(Span) { clean = false })
		if base == "" || !clean {
			return verdict.MaskPrivatePath
		}
		return verdict.MaskPrivatePath + "/" + base
	case FindHost:
		return verdict.MaskHost
	case FindUser:
		return verdict.MaskUser
	case FindIP:
		return verdict.MaskIP
	}
	return found
}

// ShellWord is one argument of a command, published: a path under a root
// (or already written $NAME/rest) becomes "$NAME/rest", quoted so that a
// shell expands the root and nothing else; anything else is mapped by
// Text and quoted by text.ShellQuote. --flag=PATH keeps its flag.
func (s *Scrubber) ShellWord(w string) string {
	prefix := ""
	if strings.HasPrefix(w, "-") {
		if k := strings.IndexByte(w, '='); k > 0 {
			prefix, w = w[:k+1], w[k+1:]
		}
	}
	if name, rest, ok := s.rootOf(w); ok {
		// The rest is relative to the root: mapped as Text maps the
		// text after $NAME (names, not paths).
		rest = strings.TrimPrefix(s.Text("$"+name+rest), "$"+name)
		if prefix != "" {
			prefix = text.ShellQuote(prefix)
		}
		return prefix + rootWord(name, rest)
	}
	return text.ShellQuote(prefix + s.Text(w))
}

// rootOf splits a word that starts with a root's path or with $NAME.
func (s *Scrubber) rootOf(w string) (name, rest string, ok bool) {
	if s == nil {
		return "", "", false
	}
	if strings.HasPrefix(w, "/") {
		for _, r := range s.roots {
			if strings.HasPrefix(w, r.Path) && (len(w) == len(r.Path) || w[len(r.Path)] == '/') {
				return r.Name, w[len(r.Path):], true
			}
		}
		return "", "", false
	}
	if strings.HasPrefix(w, "$") {
		n, rest, _ := strings.Cut(w[1:], "/")
		if s.names[n] {
			if strings.Contains(w[1:], "/") {
				rest = "/" + rest
			}
			return n, rest, true
		}
	}
	return "", "", false
}

// rootWord is "$NAME/rest" for a shell: the root expanded, rest literal.
func rootWord(name, rest string) string {
	if rest == "" {
		return `"$` + name + `"`
	}
	if q := text.ShellQuote(rest); q == rest {
		return `"$` + name + rest + `"`
	}
	return `"$` + name + `"` + text.ShellQuote(rest)
}

// Command is a stored reproduce command (one line of text.ShellJoin
// words, possibly after NAME="$NAME" environment words), published word by
// word (ShellWord). A line that does not split is mapped by Text.
func (s *Scrubber) Command(line string) string {
	if s == nil || line == "" {
		return line
	}
	words, ok := text.ShellSplit(line)
	if !ok {
		return s.Text(line)
	}
	out := make([]string, 0, len(words))
	env := true
	for _, w := range words {
		if env {
			if name, val, ok := strings.Cut(w, "="); ok && rootNameRe.MatchString(name) {
				if val == "$"+name {
					out = append(out, name+`="$`+name+`"`)
				} else {
					out = append(out, name+"="+s.ShellWord(val))
				}
				continue
			}
			env = false
		}
		out = append(out, s.ShellWord(w))
	}
	return strings.Join(out, " ")
}

// Argv maps argv words for publication as data (Text of each word:
// "$OUT/x", not shell-quoted).
func (s *Scrubber) Argv(argv []string) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = s.Text(a)
	}
	return out
}

// UsedRoots lists, sorted, the root names that text refers to as $NAME.
func (s *Scrubber) UsedRoots(texts ...string) []string {
	set := map[string]bool{}
	for _, t := range texts {
		for i := 0; i < len(t); i++ {
			if t[i] != '$' {
				continue
			}
			j := i + 1
			for j < len(t) && (isWordByte(t[j]) && t[j] != '-') {
				j++
			}
			if s.names[t[i+1:j]] {
				set[t[i+1:j]] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

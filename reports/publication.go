package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Published text (Markdown, HTML, JUnit, the docs block, the completion
// summary) holds no path, host or user name of the run host: those formats
// are rendered only from a public copy of the report, which its Publisher
// makes. reports/publish's Publisher is the one implementation (its
// Scrubber maps the strings and writes the commands); reports only asks
// for the copy through these two interfaces, so it never depends on
// publication, and a report without a publisher renders none of them.

// Publisher makes a report's public copy (reports/publish.Publisher): it
// decides what is mapped and how (Mapped, with its Mapper) and what is
// left out.
type Publisher interface {
	Public(g *GroupReport) (*GroupReport, error)
}

// Mapper maps a report's text for publication and writes the commands
// of its public copy (reports/publish.Scrubber).
type Mapper interface {
	// Text maps any string; Command maps a stored shell line word by word.
	Text(s string) string
	Command(line string) string
	// ShellWord is one word of a published command (a path under a named
	// root written "$NAME/rest"), UsedRoots the root names texts refer to
	// as $NAME, RootDescription what a named root is ("" if unknown).
	ShellWord(w string) string
	UsedRoots(texts ...string) []string
	RootDescription(name string) string
}

// errNoPublisher refuses a public format of a report nobody publishes.
var errNoPublisher = errors.New("the report has no publisher: the public formats (md, html, JUnit, the docs block, the summary) are rendered only from a public copy (reports/publish)")

// published is the report's public copy: itself when it is one, else the
// one its Publisher makes.
func (g *GroupReport) published() (*GroupReport, error) {
	switch {
	case g.mapper != nil:
		return g, nil
	case g.Publisher == nil:
		return nil, errNoPublisher
	}
	return g.Publisher.Public(g)
}

// IsPublic reports whether the report is a public copy (made by Mapped).
func (g *GroupReport) IsPublic() bool { return g.mapper != nil }

// LoadRoots are the result roots the report was loaded from (absolute):
// each is $OUT in published text.
func (g *GroupReport) LoadRoots() []string { return g.loadRoots }

// Mapped is a public copy of the report: every string of every row
// mapped by m (MapJSONStrings: a string under the key "command" is a shell
// line), the rest as it is; the copy writes its commands with m and is
// rendered as it is. Rendering the public copy of a report built from a
// published evidence pack gives the same text as rendering the original's.
func (g *GroupReport) Mapped(m Mapper) (*GroupReport, error) {
	if g.mapper != nil {
		return g, nil
	}
	out, err := mapStrings(g, m)
	if err != nil {
		// Every field of a report survives a JSON round trip (there is a
		// test); should one not, publish nothing rather than the original.
		return nil, fmt.Errorf("public copy of the report: %w", err)
	}
	out.LinkDir, out.Publisher, out.Summary, out.loadRoots, out.mapper = g.LinkDir, g.Publisher, g.Summary, g.loadRoots, m
	for i := range out.Rows {
		src := &g.Rows[i]
		row := &out.Rows[i]
		row.dir, row.files, row.joinedNote = src.dir, src.files, m.Text(src.joinedNote)
		if src.joined != nil {
			row.joined = make([]verdict.JoinedLine, len(src.joined))
			for j, l := range src.joined {
				l.Diff, l.Problem = m.Text(l.Diff), m.Text(l.Problem)
				row.joined[j] = l
			}
		}
		row.mismatches = src.mismatches.mapped(m)
	}
	return out, nil
}

// mapStrings copies v through JSON with every string mapped by m; a
// string under the key "command" is a shell line (Mapper.Command).
func mapStrings[T any](v *T, m Mapper) (*T, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	mapped, err := json.Marshal(MapJSONStrings(generic, m))
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := json.Unmarshal(mapped, out); err != nil {
		return nil, err
	}
	return out, nil
}

// MapJSONStrings maps every string (and object key) of a decoded JSON
// value by m.Text, and a string under a "command" key by m.Command.
func MapJSONStrings(v any, m Mapper) any {
	return mapValue(v, "", m)
}

func mapValue(v any, key string, m Mapper) any {
	switch x := v.(type) {
	case string:
		if key == "command" {
			return m.Command(x)
		}
		return m.Text(x)
	case []any:
		for i := range x {
			x[i] = mapValue(x[i], "", m)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[m.Text(k)] = mapValue(val, k, m)
		}
		return out
	}
	return v
}

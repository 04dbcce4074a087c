package specs

import (
	"bytes"
	"encoding/json"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// Where things are in a manifest's JSON text, so that a problem names its
// line: the line of each top-level key and of each testcases element.

// jsonPos holds the lines of a JSON object's parts (1-based).
type jsonPos struct {
	data      []byte
	object    int            // the opening brace
	keys      map[string]int // top-level key → its line
	testcases []int          // testcases[i] → the line of its opening brace
}

// positions reads the lines of a JSON object's top-level keys and of its
// testcases elements. The text is already known to decode; anything
// unexpected leaves the positions it could not find at 0.
func positions(data []byte) *jsonPos {
	pos := &jsonPos{data: data, keys: map[string]int{}}
	dec := json.NewDecoder(bytes.NewReader(data))
	skipSpace := func() int64 {
		off := dec.InputOffset()
		for off < int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n:,"), data[off]) >= 0 {
			off++
		}
		return off
	}
	pos.object = fileio.LineAt(data, skipSpace())
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return pos
	}
	for dec.More() {
		start := skipSpace()
		t, err := dec.Token()
		if err != nil {
			return pos
		}
		key, _ := t.(string)
		if _, dup := pos.keys[key]; !dup {
			pos.keys[key] = fileio.LineAt(data, start)
		}
		if key == "testcases" && pos.testcases == nil {
			if !pos.readArray(dec, skipSpace) {
				return pos
			}
			continue
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return pos
		}
	}
	return pos
}

// readArray records the line of each element of the array that comes next.
func (pos *jsonPos) readArray(dec *json.Decoder, skipSpace func() int64) bool {
	start := skipSpace()
	if start < int64(len(pos.data)) && pos.data[start] != '[' {
		var skip json.RawMessage
		return dec.Decode(&skip) == nil
	}
	if _, err := dec.Token(); err != nil {
		return false
	}
	pos.testcases = []int{}
	for dec.More() {
		pos.testcases = append(pos.testcases, fileio.LineAt(pos.data, skipSpace()))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	_, err := dec.Token()
	return err == nil
}

// key is the line of a top-level key, or of the object when it is absent.
func (pos *jsonPos) key(k string) int {
	if l, ok := pos.keys[k]; ok {
		return l
	}
	return pos.object
}

// testcase is the line of testcases[i].
func (pos *jsonPos) testcase(i int) int {
	if i < len(pos.testcases) {
		return pos.testcases[i]
	}
	return pos.key("testcases")
}

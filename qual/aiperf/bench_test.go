package aiperf

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
)

// benchFile repeats the lines of a fixture export until it is about size
// bytes, so the scanners are measured on real AIPerf 0.13.0 lines.
func benchFile(b *testing.B, fixtureName, file string, size int) string {
	b.Helper()
	src := filepath.Join("testdata", fixtureName)
	tmp := b.TempDir()
	// fixture() wants a *testing.T; unpack the gzipped file by hand.
	data := gunzipFile(b, filepath.Join(src, file+".gz"))
	var out bytes.Buffer
	for out.Len() < size {
		out.Write(data)
	}
	path := filepath.Join(tmp, file)
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

func BenchmarkScanRecords(b *testing.B) {
	path := benchFile(b, endpoint.Chat, FileRecords, 32<<20)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if err := ScanRecords(path, func(int, *RecordLine) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScanRaw(b *testing.B) {
	path := benchFile(b, endpoint.ImageRetrieval, FileRaw, 32<<20)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		if err := ScanRaw(path, func(int, *RawLine) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

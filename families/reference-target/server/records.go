package server

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// Record is one line of the --records file: one per inference request,
// written when its response completes. It never holds prompt or answer text.
type Record struct {
	RequestID        string  `json:"request_id"`
	Route            string  `json:"route"`
	Model            string  `json:"model"`
	Status           int     `json:"status"`
	HandlerMs        float64 `json:"handler_ms"`
	QueueMs          float64 `json:"queue_ms"`
	TaskMs           float64 `json:"task_ms"`
	ImageBytes       int     `json:"image_bytes"`
	ImageWidth       int     `json:"image_width"`
	ImageHeight      int     `json:"image_height"`
	WarmupMarker     bool    `json:"warmup_marker"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	TokenSource      string  `json:"token_source,omitempty"`
	ErrorType        string  `json:"error_type,omitempty"`
}

// recordWriter appends records to a file, one unbuffered write per line, so
// a record is in the file as soon as write returns, even if the process then
// crashes.
type recordWriter struct {
	mu sync.Mutex
	f  *os.File
}

func openRecords(path string) (*recordWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open records file: %w", err)
	}
	return &recordWriter{f: f}, nil
}

func (w *recordWriter) write(rec Record) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode record: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return fmt.Errorf("records file is closed")
	}
	if _, err := w.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	return nil
}

func (w *recordWriter) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if err != nil {
		return fmt.Errorf("close records file: %w", err)
	}
	return nil
}

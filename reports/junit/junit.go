// Package junit writes JUnit XML reports, the format every CI system reads.
// It is the one JUnit model of trtmc-qual: `ci` writes one test case per
// premerge step (inventory/specs), `run --junit` one per profile of the
// group (reports). It imports only the standard library.
package junit

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// Outcomes of a test case.
const (
	Passed  = "passed"
	Failed  = "failed"  // a check found something: <failure>
	Error   = "error"   // the case could not run to the end: <error>
	Skipped = "skipped" // not run, with the reason: <skipped>
)

// Case is one test case.
type Case struct {
	Name      string
	Classname string
	Duration  time.Duration
	Status    string // Passed, Failed, Error or Skipped
	// Message is the one line a CI system shows: the failure's reasons, why
	// it was skipped.
	Message string
	// Type classifies a failure or error (e.g. "setup-error", "failed").
	Type string
	// Output is the plain-text detail: the failure's body and system-out.
	Output string
}

// Suite is a named set of cases with its properties (name, value pairs,
// written in order; empty values are left out).
type Suite struct {
	Name       string
	Timestamp  time.Time
	Properties [][2]string
	Cases      []Case
}

// Counts returns how many cases failed, errored and were skipped.
func (s *Suite) Counts() (failed, errored, skipped int) {
	for _, c := range s.Cases {
		switch c.Status {
		case Failed:
			failed++
		case Error:
			errored++
		case Skipped:
			skipped++
		}
	}
	return
}

// Document is the XML of a JUnit report, as Write writes it and Read
// reads it back (tests check reports through it).
type Document struct {
	XMLName  xml.Name   `xml:"testsuites"`
	Name     string     `xml:"name,attr"`
	Tests    int        `xml:"tests,attr"`
	Failures int        `xml:"failures,attr"`
	Errors   int        `xml:"errors,attr"`
	Skipped  int        `xml:"skipped,attr"`
	Time     string     `xml:"time,attr"`
	Suites   []DocSuite `xml:"testsuite"`
}

type DocSuite struct {
	Name       string        `xml:"name,attr"`
	Tests      int           `xml:"tests,attr"`
	Failures   int           `xml:"failures,attr"`
	Errors     int           `xml:"errors,attr"`
	Skipped    int           `xml:"skipped,attr"`
	Time       string        `xml:"time,attr"`
	Timestamp  string        `xml:"timestamp,attr,omitempty"`
	Properties []DocProperty `xml:"properties>property"`
	Cases      []DocCase     `xml:"testcase"`
}

type DocProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type DocCase struct {
	Name      string      `xml:"name,attr"`
	Classname string      `xml:"classname,attr"`
	Time      string      `xml:"time,attr"`
	Failure   *DocProblem `xml:"failure,omitempty"`
	Error     *DocProblem `xml:"error,omitempty"`
	Skipped   *DocSkipped `xml:"skipped,omitempty"`
	SystemOut string      `xml:"system-out,omitempty"`
}

type DocProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

type DocSkipped struct {
	Message string `xml:"message,attr"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// Write writes the suites as one JUnit XML document named name.
func Write(w io.Writer, name string, suites ...Suite) error {
	doc := Document{Name: name}
	var total time.Duration
	for _, s := range suites {
		failed, errored, skipped := s.Counts()
		var d time.Duration
		for _, c := range s.Cases {
			d += c.Duration
		}
		xs := DocSuite{Name: s.Name, Tests: len(s.Cases), Failures: failed, Errors: errored, Skipped: skipped, Time: seconds(d)}
		if !s.Timestamp.IsZero() {
			xs.Timestamp = s.Timestamp.UTC().Format("2006-01-02T15:04:05")
		}
		for _, p := range s.Properties {
			if p[1] != "" {
				xs.Properties = append(xs.Properties, DocProperty{Name: p[0], Value: xmlSafe(p[1])})
			}
		}
		for _, c := range s.Cases {
			xc := DocCase{Name: xmlSafe(c.Name), Classname: xmlSafe(c.Classname), Time: seconds(c.Duration), SystemOut: xmlSafe(c.Output)}
			switch c.Status {
			case Failed:
				xc.Failure = &DocProblem{Message: xmlSafe(c.Message), Type: c.Type, Body: xmlSafe(c.Output)}
			case Error:
				xc.Error = &DocProblem{Message: xmlSafe(c.Message), Type: c.Type, Body: xmlSafe(c.Output)}
			case Skipped:
				xc.Skipped = &DocSkipped{Message: xmlSafe(c.Message)}
			}
			xs.Cases = append(xs.Cases, xc)
		}
		doc.Tests += xs.Tests
		doc.Failures += failed
		doc.Errors += errored
		doc.Skipped += skipped
		total += d
		doc.Suites = append(doc.Suites, xs)
	}
	doc.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// xmlSafe drops characters XML 1.0 cannot hold (the encoder escapes the rest).
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r != 0xFFFE && r != 0xFFFF {
			return r
		}
		return -1
	}, s)
}

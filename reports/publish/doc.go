// Package publish is the one home of publication: what a release engineer
// publishes (the Markdown and HTML reports, the docs block, JUnit, the
// completion summary, an evidence pack) holds no path, host or user name
// of the run host, and nothing is published that does not re-derive.
//
//   - public.go: the named roots ($OUT, $HARNESS, $TRTMC_REPO, ...) and the
//     one Scrubber that maps paths, hosts, users and IPs to them;
//   - publicreport.go: Publisher, what a report is published with, and its
//     Public copy, from which reports renders the public formats (asked for
//     through reports' Publisher and Mapper interfaces: no arrow runs up
//     from reports to this package);
//   - leak.go: the one leak scanner (LeakScanner), which looks for what
//     must not leave the host in every encoding;
//   - rederived.go: CheckRederived, the check that what is published is
//     what re-derives from the evidence (FigureError names the figure);
//   - host.go: this host's roots and identity (ForHost); cmd/ only passes
//     the --root flags.
//
// The evidence pack (`trtmc-qual export`) is the one sub-package, export:
// publication's one product with a vocabulary of its own (the pack's
// Options, Index, Row and File).
package publish

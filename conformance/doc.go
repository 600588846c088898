// Package conformance is drakit's conformance kit as one call: it wires the
// scenario core (drakit.dev/drakit/conformance/kit: the run, each
// scenario's world and cleanup ledger, probes, leases, reports) with the
// step packages of every KEP, and offers Run and Open over them. What a
// scenario checks, and how, is documented in the kit and in each step
// package; this package only decides which step packages a run has.
package conformance

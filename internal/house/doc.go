// Package house is the test of the house: its one job is to fail the build
// when the repository's layout drifts from the shape docs/architecture.md
// gives it. TestHouse reads every package of the module from the source
// tree (go/parser; no go list, no network) and checks three kinds of rule:
//
//   - size: no package has more than 25 non-test .go files or more than
//     5,000 non-test lines, and no named type more than 60 methods declared
//     in its package (test files not counted);
//   - arrows: every import points down the layering (cmd → kit → oracle;
//     drivers → harness; nobody → the emulator's internals), in tests too;
//   - exceptions: what breaks a rule today is listed in rules.go with its
//     measured size as a ceiling (or, for a test's import, its reason). The
//     list is a ratchet: a package or type that grows past its ceiling
//     fails, and so does one that has shrunk well below it (under 90%) or
//     no longer breaks the rule, so that the list is tightened as the
//     house is.
//
// The rules and the exceptions are data (rules.go); the reading of the tree
// (tree.go) and the checks (check.go) know nothing of drakit, and a test
// runs them over a small synthetic tree with one violation of each kind, to
// show that every rule can fail.
package house

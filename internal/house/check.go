package house

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
)

// rules are what the house holds its packages to.
type rules struct {
	// maxFiles and maxLines bound a package's non-test .go files and
	// their lines; maxMethods the methods of a named type.
	maxFiles, maxLines, maxMethods int
	// arrows are the imports that point the wrong way.
	arrows []arrow
	// sizes, methods and imports are the known exceptions.
	sizes   []sizeException
	methods []methodException
	imports []importException
}

// arrow forbids imports from the packages that from names (but those
// that except names) to the packages that to names. Patterns are slash
// paths below the module root whose elements are path.Match patterns;
// "x/..." is x and every package below it, "..." every package.
type arrow struct {
	rule   string
	from   []string
	except []string
	to     []string
}

// sizeException lets a package exceed maxFiles (up to files) or maxLines
// (up to lines); zero keeps the house's limit.
type sizeException struct {
	pkg          string
	files, lines int
	why          string
}

// methodException lets a named type have up to methods methods.
type methodException struct {
	pkg, typ string
	methods  int
	why      string
}

// importException lets tests of package from import package to although
// an arrow forbids it. Code (non-test files) never gets one.
type importException struct {
	from, to string
	why      string
}

// shrunk reports a measure under 90% of its ceiling: shrunk well below it,
// so that the ceiling should come down.
func shrunk(measured, ceiling int) bool { return measured*10 < ceiling*9 }

// check returns every way t breaks r, one sentence each, sorted.
func check(t *tree, r rules) []string {
	var v []string
	bad := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }

	sizes := map[string]sizeException{}
	for _, e := range r.sizes {
		sizes[e.pkg] = e
	}
	for _, k := range t.pkgs {
		e := sizes[k.path]
		for _, m := range []struct {
			what              string
			n, limit, ceiling int
		}{{"non-test .go files", k.files, r.maxFiles, e.files}, {"non-test lines", k.lines, r.maxLines, e.lines}} {
			switch {
			case m.ceiling == 0 && m.n > m.limit:
				bad("package %s has %d %s, over the limit of %d (rule: a package has at most %d %s; split it)", k.path, m.n, m.what, m.limit, m.limit, m.what)
			case m.ceiling != 0 && m.n > m.ceiling:
				bad("package %s has %d %s, over its known exception's ceiling of %d (rule: a package has at most %d %s; a known exception must not grow)", k.path, m.n, m.what, m.ceiling, m.limit, m.what)
			case m.ceiling != 0 && m.n <= m.limit:
				bad("package %s has %d %s, within the limit of %d: remove its known exception's ceiling of %d (rules.go)", k.path, m.n, m.what, m.limit, m.ceiling)
			case m.ceiling != 0 && shrunk(m.n, m.ceiling):
				bad("package %s has %d %s, well below its known exception's ceiling of %d: lower the ceiling to %d (rules.go)", k.path, m.n, m.what, m.ceiling, m.n)
			}
		}
	}
	for _, e := range r.sizes {
		if t.pkgs[e.pkg] == nil {
			bad("package %s is gone: remove its known size exception (rules.go)", e.pkg)
		}
	}

	methods := map[[2]string]int{}
	for _, e := range r.methods {
		methods[[2]string{e.pkg, e.typ}] = e.methods
		if k := t.pkgs[e.pkg]; k == nil || k.methods[e.typ] == 0 {
			bad("type %s.%s is gone: remove its known method exception (rules.go)", e.pkg, e.typ)
		}
	}
	for _, k := range t.pkgs {
		for typ, n := range k.methods {
			ceiling := methods[[2]string{k.path, typ}]
			switch {
			case ceiling == 0 && n > r.maxMethods:
				bad("type %s.%s has %d methods, over the limit of %d (rule: a named type has at most %d methods; give its jobs types of their own)", k.path, typ, n, r.maxMethods, r.maxMethods)
			case ceiling != 0 && n > ceiling:
				bad("type %s.%s has %d methods, over its known exception's ceiling of %d (rule: a named type has at most %d methods; a known exception must not grow)", k.path, typ, n, ceiling, r.maxMethods)
			case ceiling != 0 && n <= r.maxMethods:
				bad("type %s.%s has %d methods, within the limit of %d: remove its known exception (rules.go)", k.path, typ, n, r.maxMethods)
			case ceiling != 0 && shrunk(n, ceiling):
				bad("type %s.%s has %d methods, well below its known exception's ceiling of %d: lower the ceiling to %d (rules.go)", k.path, typ, n, ceiling, n)
			}
		}
	}

	excused := map[[2]string]bool{}
	for _, e := range r.imports {
		excused[[2]string{e.from, e.to}] = true
		u := t.pkgs[e.from].importOf(e.to)
		switch {
		case u == nil || u.test == "":
			bad("tests of %s no longer import %s: remove the known import exception (rules.go)", e.from, e.to)
		case len(r.broken(e.from, e.to)) == 0:
			bad("%s → %s breaks no rule: remove the known import exception (rules.go)", e.from, e.to)
		}
	}
	for _, k := range t.pkgs {
		for to, u := range k.imports {
			for _, rule := range r.broken(k.path, to) {
				if u.code != "" {
					bad("import %s → %s (%s) points the wrong way (rule: %s)", k.path, to, u.code, rule)
				}
				if u.test != "" && !excused[[2]string{k.path, to}] {
					bad("import %s → %s (%s) points the wrong way (rule: %s; tests too)", k.path, to, u.test, rule)
				}
			}
		}
	}
	sort.Strings(v)
	return slices.Compact(v)
}

// importOf is how k imports to; nil when it does not (or k is nil).
func (k *pkg) importOf(to string) *use {
	if k == nil {
		return nil
	}
	return k.imports[to]
}

// broken returns the rules of the arrows that an import from → to breaks.
func (r rules) broken(from, to string) []string {
	var rules []string
	for _, a := range r.arrows {
		if matchAny(a.from, from) && !matchAny(a.except, from) && matchAny(a.to, to) {
			rules = append(rules, a.rule)
		}
	}
	return rules
}

func matchAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, pkg) })
}

// match reports whether pattern names pkg (see arrow).
func match(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	pattern, all := strings.CutSuffix(pattern, "/...")
	pe, ke := strings.Split(pattern, "/"), strings.Split(pkg, "/")
	if len(ke) < len(pe) || !all && len(ke) != len(pe) {
		return false
	}
	for i, p := range pe {
		if ok, err := path.Match(p, ke[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

package nvml_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The shim's C files are rooms with a one-way dependency order: no file
// calls a function of a file that (directly or through others) calls back
// into it, and none is longer than ~500 lines. callGraph reads function
// definitions and calls with a small C tokenizer: enough for the shim's
// style (definitions start at brace depth 0, calls are an identifier and a
// parenthesis inside a body; comments, strings, characters and
// preprocessor lines are skipped).

// cToken is an identifier or one punctuation byte of C source.
type cToken struct {
	text string
	line int
}

// cTokens returns src's identifiers and punctuation, without comments,
// string and character literals, numbers and preprocessor lines.
func cTokens(src string) []cToken {
	var toks []cToken
	line, bol := 1, true
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			bol = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case bol && c == '#': // a preprocessor line, with its continuations
			for i < len(src) && src[i] != '\n' {
				if src[i] == '\\' && i+1 < len(src) && src[i+1] == '\n' {
					line++
					i++
				}
				i++
			}
			continue
		}
		bol = false
		switch {
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				end = len(src) - i - 4
			}
			line += strings.Count(src[i:i+2+end+2], "\n")
			i += 2 + end + 2
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			i = j + 1
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			if c < '0' || c > '9' {
				toks = append(toks, cToken{src[i:j], line})
			}
			i = j
		default:
			toks = append(toks, cToken{string(c), line})
			i++
		}
	}
	return toks
}

var cKeywords = map[string]bool{
	"if": true, "while": true, "for": true, "switch": true, "return": true, "sizeof": true,
	"do": true, "case": true, "else": true, "__attribute__": true, "_Static_assert": true,
	"__typeof__": true, "typeof": true, "alignof": true, "_Alignof": true, "offsetof": true,
}

// cFunctions is what one C file defines and calls.
type cFunctions struct {
	defined map[string]bool // name -> static
	calls   map[string]bool
}

// parseCFunctions finds src's function definitions (an identifier, a
// parenthesised list and a brace at depth 0) and the calls in their bodies.
func parseCFunctions(src string) cFunctions {
	f := cFunctions{defined: map[string]bool{}, calls: map[string]bool{}}
	toks := cTokens(src)
	depth := 0
	stmtStart := 0 // first token of the current top-level declaration
	for i := 0; i < len(toks); i++ {
		t := toks[i].text
		switch t {
		case "{":
			if depth == 0 && i > 0 && toks[i-1].text == ")" {
				// Walk back over the parameter list to the function's name.
				n, j := 0, i-1
				for ; j >= 0; j-- {
					if toks[j].text == ")" {
						n++
					} else if toks[j].text == "(" {
						if n--; n == 0 {
							break
						}
					}
				}
				if j > 0 && !cKeywords[toks[j-1].text] {
					static := slices.ContainsFunc(toks[stmtStart:j], func(t cToken) bool { return t.text == "static" })
					f.defined[toks[j-1].text] = static
				}
			}
			depth++
		case "}":
			depth--
			if depth == 0 {
				stmtStart = i + 1
			}
		case ";":
			if depth == 0 {
				stmtStart = i + 1
			}
		case "(":
			if depth > 0 && i > 0 && !cKeywords[toks[i-1].text] && isIdent(toks[i-1].text) {
				f.calls[toks[i-1].text] = true
			}
		}
	}
	return f
}

func isIdent(s string) bool {
	c := s[0]
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// callGraph maps each file to the files whose functions it calls: a call
// goes to the file's own definition of the name, else to the one file that
// defines it without static (calls of the C library and of macros resolve
// to none).
func callGraph(files map[string]string) map[string][]string {
	parsed := map[string]cFunctions{}
	exported := map[string]string{}
	for name, src := range files {
		parsed[name] = parseCFunctions(src)
		for fn, static := range parsed[name].defined {
			if !static {
				exported[fn] = name
			}
		}
	}
	graph := map[string][]string{}
	for name, f := range parsed {
		deps := map[string]bool{}
		for fn := range f.calls {
			if _, own := f.defined[fn]; own {
				continue
			}
			if to, ok := exported[fn]; ok && to != name {
				deps[to] = true
			}
		}
		graph[name] = sortedKeys(deps)
	}
	return graph
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// callLoops returns every cycle of files that call each other, each as
// "a.c -> b.c -> a.c", found by a depth-first search (one cycle per back
// edge).
func callLoops(graph map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path, loops []string
	var visit func(string)
	visit = func(n string) {
		state[n] = open
		path = append(path, n)
		for _, m := range graph[n] {
			switch state[m] {
			case unseen:
				visit(m)
			case open:
				at := slices.Index(path, m)
				loops = append(loops, strings.Join(append(slices.Clone(path[at:]), m), " -> "))
			}
		}
		path = path[:len(path)-1]
		state[n] = done
	}
	names := make([]string, 0, len(graph))
	for n := range graph {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if state[n] == unseen {
			visit(n)
		}
	}
	return loops
}

func TestCallLoopsFindsALoop(t *testing.T) {
	files := map[string]string{
		"a.c": "#include \"b.h\"\nstatic int helper(void) { return 1; }\nint a_one(int x) {\n    /* b_two() in a comment */\n    return helper() + b_two(x);\n}\n",
		"b.c": "int b_two(int x) { if (x) { return a_one(x - 1); } return 0; }\nint b_three(void) { return c_four(\"a_one(\"); }\n",
		"c.c": "static int helper(void) { return 2; }\nint c_four(const char *s) { (void)s; return helper(); }\n",
	}
	graph := callGraph(files)
	want := map[string][]string{"a.c": {"b.c"}, "b.c": {"a.c", "c.c"}, "c.c": {}}
	for name, deps := range want {
		if !slices.Equal(graph[name], deps) {
			t.Errorf("%s calls into %v, want %v (a static helper is the file's own, comments and strings are no calls)", name, graph[name], deps)
		}
	}
	if loops := callLoops(graph); !slices.Equal(loops, []string{"a.c -> b.c -> a.c"}) {
		t.Errorf("loops = %q, want the one between a.c and b.c", loops)
	}
	delete(files, "a.c")
	if loops := callLoops(callGraph(files)); len(loops) != 0 {
		t.Errorf("without a.c: loops = %q, want none", loops)
	}
}

func TestShimFilesCallOneWay(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("shim", "*.c"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("shim sources: %v, %v", paths, err)
	}
	files := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = string(b)
		if n := strings.Count(string(b), "\n"); n > 500 {
			t.Errorf("%s has %d lines: split it into rooms of at most ~500", p, n)
		}
	}
	graph := callGraph(files)
	for _, loop := range callLoops(graph) {
		t.Errorf("shim files call each other: %s", loop)
	}
	if t.Failed() {
		var b strings.Builder
		for _, n := range sortedKeys(func() map[string]bool {
			m := map[string]bool{}
			for k := range graph {
				m[k] = true
			}
			return m
		}()) {
			fmt.Fprintf(&b, "  %s -> %s\n", n, strings.Join(graph[n], ", "))
		}
		t.Logf("call graph:\n%s", b.String())
	}
}

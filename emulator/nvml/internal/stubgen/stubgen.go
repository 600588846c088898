// Package stubgen reads NVML's C header (the nvml.h vendored by
// github.com/NVIDIA/go-nvml) and writes the shim's weak stub file: one
// exported definition per declared function that returns
// NVML_ERROR_NOT_SUPPORTED, so that a client calling any NVML function finds
// the symbol instead of dying in the dynamic linker.
//
// Contract: Parse returns every function the header declares (versioned and
// unversioned names alike, whatever the preprocessor guards around them), in
// header order and without duplicates. Generate emits a stub for every
// function returning nvmlReturn_t; functions with another return type must be
// listed in Handwritten (the shim implements them itself), otherwise
// Generate fails so that a new header cannot silently add an unsafe stub.
package stubgen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// ErrHeader classifies every error about the header's content.
var ErrHeader = errors.New("unexpected nvml.h content")

// Handwritten lists the functions whose return type is not nvmlReturn_t,
// with that return type as Parse normalizes it. The shim must implement each
// of them; Generate emits no stub for them.
var Handwritten = map[string]string{
	"nvmlErrorString": "const char *",
}

// Function is one function declared in nvml.h.
type Function struct {
	Name       string
	ReturnType string // normalized: single spaces, "*" preceded by a space
}

// Source describes where a header came from; it is written into the
// generated file's banner.
type Source struct {
	Module  string // e.g. github.com/NVIDIA/go-nvml
	Version string // e.g. v0.13.4-1
	Path    string // path of the header inside the module, e.g. pkg/nvml/nvml.h
}

// minFunctions is FromHeaderFile's sanity floor: go-nvml's header has
// declared several hundred functions for years, so far fewer means the
// parser lost track.
const minFunctions = 100

var (
	identRe     = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	deprecateRe = regexp.MustCompile(`\bDEPRECATED\s*\([^)]*\)`)
	spaceRe     = regexp.MustCompile(`\s+`)
	versionRe   = regexp.MustCompile(`NVML VERSION:\s*([0-9.]+)`)
)

// Parse lists the functions declared in header (the text of nvml.h). A
// declaration is recognised by NVML's export macro DECLDIR, which precedes
// every function name in the header.
func Parse(header []byte) ([]Function, error) {
	text := stripPreprocessor(stripComments(header))
	var funcs []Function
	seen := map[string]bool{}
	for _, loc := range identRe.FindAllIndex(text, -1) {
		if string(text[loc[0]:loc[1]]) != "DECLDIR" {
			continue
		}
		fn, err := declarationAt(text, loc[0], loc[1])
		if err != nil {
			return nil, err
		}
		if seen[fn.Name] {
			continue
		}
		seen[fn.Name] = true
		funcs = append(funcs, fn)
	}
	return funcs, nil
}

// NVMLVersion returns the NVML release recorded in the header's first
// comment ("NVML VERSION: 13.4.92"), or "" when there is none.
func NVMLVersion(header []byte) string {
	if m := versionRe.FindSubmatch(header); m != nil {
		return string(m[1])
	}
	return ""
}

// declarationAt parses the declaration around the DECLDIR token at
// text[start:end]: the return type is everything since the previous
// declaration boundary (minus DECLDIR and DEPRECATED(...)) plus any tokens
// between DECLDIR and the name; the name is the identifier before '('.
func declarationAt(text []byte, start, end int) (Function, error) {
	begin := bytes.LastIndexAny(text[:start], ";{}")
	before := string(text[begin+1 : start])
	paren := bytes.IndexByte(text[end:], '(')
	if paren < 0 {
		return Function{}, fmt.Errorf("%w: DECLDIR at offset %d is not followed by a parameter list", ErrHeader, start)
	}
	after := string(text[end : end+paren])
	idents := identRe.FindAllStringIndex(after, -1)
	if len(idents) == 0 {
		return Function{}, fmt.Errorf("%w: DECLDIR at offset %d has no function name", ErrHeader, start)
	}
	last := idents[len(idents)-1]
	name := after[last[0]:last[1]]
	if strings.TrimSpace(after[last[1]:]) != "" || !strings.HasPrefix(name, "nvml") {
		return Function{}, fmt.Errorf("%w: unexpected declaration %q", ErrHeader, strings.TrimSpace(before+"DECLDIR"+after))
	}
	ret := deprecateRe.ReplaceAllString(before, " ") + " " + after[:last[0]]
	return Function{Name: name, ReturnType: normalizeType(ret)}, nil
}

func normalizeType(s string) string {
	s = strings.ReplaceAll(s, "*", " * ")
	s = strings.TrimSpace(spaceRe.ReplaceAllString(s, " "))
	return strings.ReplaceAll(s, "* *", "**")
}

// stripComments blanks C comments (keeping newlines so offsets stay
// meaningful) and leaves string and character literals alone.
func stripComments(src []byte) []byte {
	out := make([]byte, 0, len(src))
	for i := 0; i < len(src); {
		switch {
		case src[i] == '"' || src[i] == '\'':
			q := src[i]
			j := i + 1
			for j < len(src) && src[j] != q && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(src))
			out = append(out, src[i:j]...)
			i = j
		case bytes.HasPrefix(src[i:], []byte("/*")):
			j := bytes.Index(src[i+2:], []byte("*/"))
			stop := len(src)
			if j >= 0 {
				stop = i + 2 + j + 2
			}
			out = append(out, ' ')
			out = append(out, bytes.Repeat([]byte("\n"), bytes.Count(src[i:stop], []byte("\n")))...)
			i = stop
		case bytes.HasPrefix(src[i:], []byte("//")):
			j := bytes.IndexByte(src[i:], '\n')
			if j < 0 {
				j = len(src) - i
			}
			out = append(out, ' ')
			i += j
		default:
			out = append(out, src[i])
			i++
		}
	}
	return out
}

// stripPreprocessor blanks preprocessor directives, including continuation
// lines, so that macro definitions never look like declarations.
func stripPreprocessor(src []byte) []byte {
	lines := bytes.Split(src, []byte("\n"))
	continued := false
	for i, l := range lines {
		directive := continued || bytes.HasPrefix(bytes.TrimLeft(l, " \t"), []byte("#"))
		continued = directive && bytes.HasSuffix(bytes.TrimRight(l, " \t\r"), []byte("\\"))
		if directive {
			lines[i] = nil
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// Generate writes the C file holding one weak stub per function that
// returns nvmlReturn_t. nvmlVersion is the NVML release the header documents.
func Generate(src Source, nvmlVersion string, funcs []Function) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by go run ./internal/cmd/genstubs; DO NOT EDIT.\n")
	fmt.Fprintf(&b, "//\n// Source: %s %s %s", src.Module, src.Version, src.Path)
	if nvmlVersion != "" {
		fmt.Fprintf(&b, " (NVML %s)", nvmlVersion)
	}
	fmt.Fprintf(&b, ".\n")
	var stubs []string
	for _, f := range funcs {
		if want, ok := Handwritten[f.Name]; ok {
			if f.ReturnType != want {
				return nil, fmt.Errorf("%w: %s returns %q, the shim implements it as returning %q", ErrHeader, f.Name, f.ReturnType, want)
			}
			continue
		}
		if f.ReturnType != "nvmlReturn_t" {
			return nil, fmt.Errorf("%w: %s returns %q; implement it by hand in the shim and add it to stubgen.Handwritten", ErrHeader, f.Name, f.ReturnType)
		}
		stubs = append(stubs, f.Name)
	}
	fmt.Fprintf(&b, "// %d functions declared: %d weak stubs returning NVML_ERROR_NOT_SUPPORTED (strong\n", len(funcs), len(stubs))
	fmt.Fprintf(&b, "// definitions in the shim override some), %d implemented only by hand.\n\n", len(funcs)-len(stubs))
	fmt.Fprintf(&b, "#include \"stubs.h\"\n\n")
	for _, name := range stubs {
		fmt.Fprintf(&b, "NVML_STUB(%s)\n", name)
	}
	return b.Bytes(), nil
}

// FromHeaderFile reads the header at path, which src describes, and
// generates the stub file.
func FromHeaderFile(path string, src Source) ([]byte, error) {
	header, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read NVML header: %w", err)
	}
	funcs, err := Parse(header)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if len(funcs) < minFunctions {
		return nil, fmt.Errorf("parse %s: %w: found only %d function declarations", path, ErrHeader, len(funcs))
	}
	code, err := Generate(src, NVMLVersion(header), funcs)
	if err != nil {
		return nil, fmt.Errorf("generate stubs from %s: %w", path, err)
	}
	return code, nil
}

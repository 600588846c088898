package nvml

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Function is an NVML function the shim implements.
type Function struct {
	// Name is the exported symbol, e.g. nvmlDeviceGetUUID.
	Name string
	// File is the shim source that defines it, e.g. device.c.
	File string
}

// sourceTopics says what each shim source implements, in the order the
// grouped list shows them; other sources follow in name order.
var sourceTopics = []struct{ file, topic string }{
	{"shim.c", "initialisation, system versions, enumeration and lookups"},
	{"error_string.c", "error strings"},
	{"device.c", "device queries"},
	{"events.c", "event sets for health monitors"},
	{"health.c", "health queries: ECC, retired pages, remapped rows, throttle reasons, temperature, field values"},
	{"nvlink.c", "NVLink links and their far ends, multi-node fabric info, topology and P2P between GPUs"},
	{"mig_profiles.c", "MIG profiles, placements and capacity"},
	{"mig.c", "MIG GPU and compute instances and MIG device handles"},
	{"mig_create.c", "MIG mode, instance creation and destruction"},
}

// exportRE matches the start of an exported definition in the shim's
// sources: NVML_EXPORT, the return type, the name and its parenthesis.
var exportRE = regexp.MustCompile(`(?m)^NVML_EXPORT\s+[^(;{]*?\b(nvml[A-Za-z0-9_]+)\s*\(`)

// ImplementedFunctions lists the NVML functions the shim's sources define
// (every NVML_EXPORT definition), file by file in name order of the files,
// each file's in source order. Every other function of nvml.h is a stub
// returning NVML_ERROR_NOT_SUPPORTED.
func ImplementedFunctions() []Function {
	var out []Function
	for _, file := range sourceFiles() {
		b, _ := sources.ReadFile(path.Join("shim", file))
		for _, m := range exportRE.FindAllSubmatch(b, -1) {
			out = append(out, Function{Name: string(m[1]), File: file})
		}
	}
	return out
}

// Implemented lists the names of ImplementedFunctions.
var Implemented = func() []string {
	var names []string
	for _, f := range ImplementedFunctions() {
		names = append(names, f.Name)
	}
	return names
}()

// ImplementedMarkdown is the list of implemented functions as Markdown, one
// bullet per source file, as the README shows it.
func ImplementedMarkdown() string {
	byFile := map[string][]string{}
	funcs := ImplementedFunctions()
	for _, f := range funcs {
		byFile[f.File] = append(byFile[f.File], "`"+f.Name+"`")
	}
	var b strings.Builder
	write := func(file, topic string) {
		if names := byFile[file]; len(names) > 0 {
			fmt.Fprintf(&b, "- `shim/%s`, %s (%d): %s\n", file, topic, len(names), strings.Join(names, ", "))
			delete(byFile, file)
		}
	}
	for _, t := range sourceTopics {
		write(t.file, t.topic)
	}
	for _, file := range sourceFiles() {
		write(file, "other functions")
	}
	fmt.Fprintf(&b, "\n%d functions in all.\n", len(funcs))
	return b.String()
}

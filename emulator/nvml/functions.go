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

// sourceTopics says what each shim source implements, for the grouped list.
var sourceTopics = map[string]string{
	"shim.c":   "initialisation, error strings, system versions, enumeration and lookups",
	"device.c": "device queries",
	"events.c": "events (health monitoring)",
	"mig.c":    "MIG: profiles, placements, instances, MIG device handles, and their creation and destruction",
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
	var b strings.Builder
	funcs := ImplementedFunctions()
	for i := 0; i < len(funcs); {
		file := funcs[i].File
		var names []string
		for ; i < len(funcs) && funcs[i].File == file; i++ {
			names = append(names, "`"+funcs[i].Name+"`")
		}
		topic := sourceTopics[file]
		if topic == "" {
			topic = file
		}
		fmt.Fprintf(&b, "- %s (`shim/%s`, %d): %s\n", topic, file, len(names), strings.Join(names, ", "))
	}
	fmt.Fprintf(&b, "\n%d functions in all.\n", len(funcs))
	return b.String()
}

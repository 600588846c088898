package nvmlstate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Header is the first line of every version-2 state file.
const Header = "drakit-nvml-state v2"

// headerV1 is the first line of a version-1 file: the same records without
// the end record, so a truncated one could not be told from a whole one.
const headerV1 = "drakit-nvml-state v1"

// EndRecord is the record type of the last line of every state file: a file
// without it was cut short.
const EndRecord = "end"

// maxLineBytes bounds a line, its newline included.
const maxLineBytes = 1024 * 1024

// RelativePath is where the state file lives below an emulator root, and where
// a container sees it.
const RelativePath = "run/drakit-emulator/nvml.state"

// MaxVersionLength bounds the driver and NVML version strings: NVML's version
// buffers hold 80 bytes including the terminating NUL.
const MaxVersionLength = 79

// ErrInvalid classifies every error returned by Parse and Validate.
var ErrInvalid = errors.New("invalid NVML state")

// System is the driver-wide part of the state.
type System struct {
	DriverVersion     string // e.g. 570.172.08; must parse as a version
	NVMLVersion       string // e.g. 12.570.172.08
	CUDADriverVersion int    // e.g. 12080 for CUDA 12.8
}

// GPU is one physical GPU as NVML reports it.
type GPU struct {
	Minor          int    // /dev/nvidia<Minor>, nvmlDeviceGetMinorNumber
	UUID           string // GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
	Name           string // nvmlDeviceGetName
	BusID          string // NVML form, 00000000:1B:00.0
	PCIDeviceID    uint32 // (device << 16) | vendor
	PCISubSystemID uint32 // (subsystem device << 16) | subsystem vendor
	MemoryTotal    uint64 // bytes
	MemoryReserved uint64 // bytes used by the driver; free = total - reserved
	Architecture   int    // nvmlDeviceArchitecture_t, e.g. 9 = Hopper
	Brand          int    // nvmlBrandType_t, e.g. 2 = Tesla
	CCMajor        int    // CUDA compute capability
	CCMinor        int
	NUMANode       int // -1 when unknown
	MIGCapable     bool
	MIGMode        int // current MIG mode: 0 disabled, 1 enabled
}

// State is the whole file. The MIG slices hold the mig, giprofile,
// ciprofile, gi and ci records (see mig.go); they are nil when the file has
// none.
type State struct {
	System System
	GPUs   []GPU

	MIG              []MIG
	GIProfiles       []GIProfile
	CIProfiles       []CIProfile
	GPUInstances     []GPUInstance
	ComputeInstances []ComputeInstance

	// Faults and Events hold the fault and event records (see fault.go);
	// nil when the file has none.
	Faults []Fault
	Events []Event

	// NVLinks, Fabrics and Peers hold the nvlink, fabric and peer records
	// (see nvlink.go); nil when the file has none.
	NVLinks []NVLink
	Fabrics []Fabric
	Peers   []Peer
}

var (
	uuidPattern  = regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	busIDPattern = regexp.MustCompile(`^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]$`)
	versionPat   = regexp.MustCompile(`^[0-9]+(\.[0-9]+){1,3}$`)
)

// Validate reports the first inconsistency, naming the record and field.
func (s *State) Validate() error {
	if !versionPat.MatchString(s.System.DriverVersion) || len(s.System.DriverVersion) > MaxVersionLength {
		return fmt.Errorf("%w: system.driverVersion %q is not a version", ErrInvalid, s.System.DriverVersion)
	}
	if !versionPat.MatchString(s.System.NVMLVersion) || len(s.System.NVMLVersion) > MaxVersionLength {
		return fmt.Errorf("%w: system.nvmlVersion %q is not a version", ErrInvalid, s.System.NVMLVersion)
	}
	if s.System.CUDADriverVersion <= 0 || s.System.CUDADriverVersion > math.MaxInt32 {
		return fmt.Errorf("%w: system.cudaDriverVersion must be positive and fit 32 bits", ErrInvalid)
	}
	minors := map[int]bool{}
	uuids := map[string]bool{}
	busIDs := map[string]bool{}
	for i, g := range s.GPUs {
		where := fmt.Sprintf("gpu[%d]", i)
		switch {
		case g.Minor < 0 || g.Minor > 254:
			return fmt.Errorf("%w: %s.minor %d out of range 0..254", ErrInvalid, where, g.Minor)
		case minors[g.Minor]:
			return fmt.Errorf("%w: %s.minor %d used twice", ErrInvalid, where, g.Minor)
		case !uuidPattern.MatchString(g.UUID):
			return fmt.Errorf("%w: %s.uuid %q is not GPU-<uuid>", ErrInvalid, where, g.UUID)
		case uuids[g.UUID]:
			return fmt.Errorf("%w: %s.uuid %q used twice", ErrInvalid, where, g.UUID)
		case g.Name == "" || len(g.Name) >= 96 || strings.ContainsAny(g.Name, "\t\n"):
			return fmt.Errorf("%w: %s.name %q must be 1..95 characters without tab or newline", ErrInvalid, where, g.Name)
		case !busIDPattern.MatchString(g.BusID):
			return fmt.Errorf("%w: %s.busId %q is not DDDDDDDD:BB:DD.F (upper-case hex)", ErrInvalid, where, g.BusID)
		case busIDs[g.BusID]:
			return fmt.Errorf("%w: %s.busId %q used twice", ErrInvalid, where, g.BusID)
		case g.MemoryTotal == 0:
			return fmt.Errorf("%w: %s.memoryTotal must be positive", ErrInvalid, where)
		case g.MemoryReserved > g.MemoryTotal:
			return fmt.Errorf("%w: %s.memoryReserved exceeds memoryTotal", ErrInvalid, where)
		case !fitsInt32(g.Architecture, g.Brand, g.CCMajor, g.CCMinor, g.NUMANode):
			return fmt.Errorf("%w: %s: architecture, brand, ccMajor, ccMinor and numaNode must fit 32 bits", ErrInvalid, where)
		case g.MIGMode != 0 && g.MIGMode != 1:
			return fmt.Errorf("%w: %s.migMode must be 0 or 1", ErrInvalid, where)
		case g.MIGMode == 1 && !g.MIGCapable:
			return fmt.Errorf("%w: %s.migMode is 1 on a GPU that is not MIG capable", ErrInvalid, where)
		}
		minors[g.Minor] = true
		uuids[g.UUID] = true
		busIDs[g.BusID] = true
	}
	if err := s.validateMIG(); err != nil {
		return err
	}
	if err := s.validateNVLink(); err != nil {
		return err
	}
	return s.validateFaults()
}

// Write validates s and writes it in the version-2 format, ending with the
// end record.
func Write(w io.Writer, s *State) error {
	if err := s.Validate(); err != nil {
		return err
	}
	b := &strings.Builder{}
	fmt.Fprintln(b, Header)
	fmt.Fprintf(b, "system\tdriverVersion=%s\tnvmlVersion=%s\tcudaDriverVersion=%d\n",
		s.System.DriverVersion, s.System.NVMLVersion, s.System.CUDADriverVersion)
	for _, g := range s.GPUs {
		fmt.Fprintf(b, "gpu\tminor=%d\tuuid=%s\tname=%s\tbusId=%s\tpciDeviceId=0x%08X\tpciSubSystemId=0x%08X"+
			"\tmemoryTotal=%d\tmemoryReserved=%d\tarchitecture=%d\tbrand=%d\tccMajor=%d\tccMinor=%d"+
			"\tnumaNode=%d\tmigCapable=%d\tmigMode=%d\n",
			g.Minor, g.UUID, g.Name, g.BusID, g.PCIDeviceID, g.PCISubSystemID,
			g.MemoryTotal, g.MemoryReserved, g.Architecture, g.Brand, g.CCMajor, g.CCMinor,
			g.NUMANode, boolInt(g.MIGCapable), g.MIGMode)
	}
	writeFaults(b, s)
	writeNVLink(b, s)
	writeMIG(b, s)
	fmt.Fprintln(b, EndRecord)
	_, err := io.WriteString(w, b.String())
	return err
}

// ReadFile reads and parses the state file at path; errors name the file and
// the line.
func ReadFile(path string) (*State, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read NVML state: %w", err)
	}
	defer f.Close()
	s, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("read NVML state %s: %w", path, err)
	}
	return s, nil
}

// Parse reads a version-2 state file; errors name the line. Every line must
// end with a newline and the last one must be the end record, so a file cut
// short anywhere is an error.
func Parse(r io.Reader) (*State, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLineBytes)
	terminated := true
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		advance, token, err := bufio.ScanLines(data, atEOF)
		if token != nil {
			terminated = data[advance-1] == '\n'
		}
		return advance, token, err
	})
	s := &State{}
	line, endLine := 0, 0
	sawSystem := false
	for sc.Scan() {
		line++
		text := sc.Text()
		switch {
		case !terminated:
			return nil, fmt.Errorf("%w: line %d: no newline at the end of the file: the file is truncated", ErrInvalid, line)
		case endLine != 0:
			return nil, fmt.Errorf("%w: line %d: content after the end record on line %d", ErrInvalid, line, endLine)
		case line == 1 && text == headerV1:
			return nil, fmt.Errorf("%w: line 1: %q is a version-1 file, which has no end record: render the root again", ErrInvalid, text)
		case line == 1 && text != Header:
			return nil, fmt.Errorf("%w: line 1: expected %q, got %q", ErrInvalid, Header, text)
		case line == 1, text == "", strings.HasPrefix(text, "#"):
			continue
		}
		parts := strings.Split(text, "\t")
		fields := map[string]string{}
		for _, p := range parts[1:] {
			k, v, ok := strings.Cut(p, "=")
			if !ok {
				return nil, fmt.Errorf("%w: line %d: field %q is not key=value", ErrInvalid, line, p)
			}
			if _, dup := fields[k]; dup {
				return nil, fmt.Errorf("%w: line %d: field %s given twice", ErrInvalid, line, k)
			}
			fields[k] = v
		}
		fp := fieldParser{line: line, fields: fields}
		switch parts[0] {
		case EndRecord:
			endLine = line
		case "system":
			if sawSystem {
				return nil, fmt.Errorf("%w: line %d: second system record", ErrInvalid, line)
			}
			sawSystem = true
			s.System = System{
				DriverVersion:     fp.str("driverVersion"),
				NVMLVersion:       fp.str("nvmlVersion"),
				CUDADriverVersion: int(fp.int("cudaDriverVersion")),
			}
		case "gpu":
			s.GPUs = append(s.GPUs, GPU{
				Minor:          int(fp.int("minor")),
				UUID:           fp.str("uuid"),
				Name:           fp.str("name"),
				BusID:          fp.str("busId"),
				PCIDeviceID:    uint32(fp.uint("pciDeviceId", 32)),
				PCISubSystemID: uint32(fp.uint("pciSubSystemId", 32)),
				MemoryTotal:    fp.uint("memoryTotal", 64),
				MemoryReserved: fp.uint("memoryReserved", 64),
				Architecture:   int(fp.int("architecture")),
				Brand:          int(fp.int("brand")),
				CCMajor:        int(fp.int("ccMajor")),
				CCMinor:        int(fp.int("ccMinor")),
				NUMANode:       int(fp.int("numaNode")),
				MIGCapable:     fp.flag("migCapable"),
				MIGMode:        int(fp.int("migMode")),
			})
		default:
			if !parseFaultRecord(s, parts[0], &fp) && !parseNVLinkRecord(s, parts[0], &fp) {
				parseMIGRecord(s, parts[0], &fp)
			}
		}
		if fp.err != nil {
			return nil, fp.err
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("%w: line %d: longer than %d bytes", ErrInvalid, line+1, maxLineBytes-1)
	} else if err != nil {
		return nil, fmt.Errorf("read line %d: %w", line+1, err)
	}
	if line == 0 {
		return nil, fmt.Errorf("%w: empty file", ErrInvalid)
	}
	if endLine == 0 {
		return nil, fmt.Errorf("%w: line %d: end of file before the end record %q: the file is truncated", ErrInvalid, line+1, EndRecord)
	}
	if !sawSystem {
		return nil, fmt.Errorf("%w: no system record", ErrInvalid)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

type fieldParser struct {
	line   int
	fields map[string]string
	err    error
}

func (p *fieldParser) str(key string) string {
	v, ok := p.fields[key]
	if !ok && p.err == nil {
		p.err = fmt.Errorf("%w: line %d: missing field %s", ErrInvalid, p.line, key)
	}
	return v
}

// int reads a signed 32-bit integer field.
func (p *fieldParser) int(key string) int64 {
	v := p.str(key)
	if p.err != nil {
		return 0
	}
	n, err := parseInt32(v)
	if err != nil {
		p.err = fmt.Errorf("%w: line %d: field %s=%q is not a 32-bit integer", ErrInvalid, p.line, key, v)
	}
	return n
}

func (p *fieldParser) flag(key string) bool {
	n := p.int(key)
	if p.err == nil && n != 0 && n != 1 {
		p.err = fmt.Errorf("%w: line %d: field %s=%d must be 0 or 1", ErrInvalid, p.line, key, n)
	}
	return n == 1
}

func (p *fieldParser) uint(key string, bits int) uint64 {
	v := p.str(key)
	if p.err != nil {
		return 0
	}
	n, err := parseUint(v, bits)
	if err != nil {
		p.err = fmt.Errorf("%w: line %d: field %s=%q is not an unsigned %d-bit integer", ErrInvalid, p.line, key, v, bits)
	}
	return n
}

func fitsInt32(values ...int) bool {
	for _, v := range values {
		if v < math.MinInt32 || v > math.MaxInt32 {
			return false
		}
	}
	return true
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseUint reads the state file's unsigned integer syntax: decimal digits, or
// 0x followed by hex digits. Signs, underscores and other prefixes are errors.
func parseUint(v string, bits int) (uint64, error) {
	digits, base, valid := v, 10, "0123456789"
	if h, ok := strings.CutPrefix(v, "0x"); ok {
		digits, base, valid = h, 16, "0123456789abcdefABCDEF"
	}
	for _, c := range digits {
		if !strings.ContainsRune(valid, c) {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.ParseUint(digits, base, bits)
}

// parseInt32 reads a signed 32-bit integer: -decimal, or the unsigned syntax.
func parseInt32(v string) (int64, error) {
	if d, ok := strings.CutPrefix(v, "-"); ok {
		n, err := parseUint(d, 64)
		if err != nil || strings.HasPrefix(d, "0x") || n > 1<<31 {
			return 0, strconv.ErrRange
		}
		return -int64(n), nil
	}
	n, err := parseUint(v, 31)
	return int64(n), err
}

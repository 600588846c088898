package tpuhw

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MetadataTPUEnvRelativePath is where the emulator puts the host's tpu-env
// below its root: what a GCE TPU VM's metadata server serves as
// instance/attributes/tpu-env, which the upstream DRA driver reads when no
// flag or node label names the topology. A driver reads the host's slice
// and worker id from it (the chips themselves it finds in sysfs).
const MetadataTPUEnvRelativePath = "run/drakit-emulator/metadata/instance/attributes/tpu-env"

// Keys of the tpu-env attribute.
const (
	TPUEnvAcceleratorType    = "ACCELERATOR_TYPE"
	TPUEnvTopology           = "TOPOLOGY"
	TPUEnvChipsPerHostBounds = "CHIPS_PER_HOST_BOUNDS"
	TPUEnvHostBounds         = "HOST_BOUNDS"
	TPUEnvWorkerID           = "WORKER_ID"
	TPUEnvSliceName          = "TPU_NAME"
)

// ErrTPUEnv is wrapped by the errors of ParseTPUEnv.
var ErrTPUEnv = errors.New("invalid tpu-env")

// TPUEnv is a host's tpu-env: its generation, slice and worker id.
type TPUEnv struct {
	Generation string
	// SliceName is empty for a single-host slice.
	SliceName string
	Slice     Slice
	WorkerID  int
}

// CommaBounds formats b as the tpu-env and TPU_*_BOUNDS variables do,
// "2,2,1".
func CommaBounds(b Bounds) string { return fmt.Sprintf("%d,%d,%d", b.X, b.Y, b.Z) }

// FormatTPUEnv writes e in the metadata server's multi-line KEY: 'value'
// form, keys sorted.
func FormatTPUEnv(e TPUEnv) string {
	kv := map[string]string{
		TPUEnvAcceleratorType:    fmt.Sprintf("%s-%d", e.Generation, e.Slice.Topology.Chips()),
		TPUEnvTopology:           e.Slice.Topology.String(),
		TPUEnvChipsPerHostBounds: CommaBounds(e.Slice.ChipBounds),
		TPUEnvHostBounds:         CommaBounds(e.Slice.HostBounds()),
		TPUEnvWorkerID:           strconv.Itoa(e.WorkerID),
		TPUEnvSliceName:          e.SliceName,
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: '%s'\n", k, kv[k])
	}
	return b.String()
}

// ParseTPUEnv parses a tpu-env attribute: ACCELERATOR_TYPE ("v5p-16"; the
// generation is what precedes the last '-'), TOPOLOGY, CHIPS_PER_HOST_BOUNDS
// ("2,2,1"), WORKER_ID and, optional, TPU_NAME; other keys are ignored.
func ParseTPUEnv(data string) (TPUEnv, error) {
	kv := map[string]string{}
	for i, line := range strings.Split(data, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		if !ok || len(v) < 2 || v[0] != '\'' || v[len(v)-1] != '\'' {
			return TPUEnv{}, fmt.Errorf("%w: line %d: %q is not KEY: 'value'", ErrTPUEnv, i+1, line)
		}
		kv[strings.TrimSpace(k)] = v[1 : len(v)-1]
	}
	var e TPUEnv
	var errs []error
	acc := kv[TPUEnvAcceleratorType]
	if i := strings.LastIndex(acc, "-"); i > 0 {
		e.Generation = acc[:i]
	}
	if _, ok := LookupGeneration(e.Generation); !ok {
		errs = append(errs, fmt.Errorf("%s %q: want <generation>-<chips> with a generation of %v", TPUEnvAcceleratorType, acc, GenerationNames()))
	}
	topo, err := ParseBounds(kv[TPUEnvTopology])
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", TPUEnvTopology, err))
	}
	chip, err := ParseBounds(strings.ReplaceAll(kv[TPUEnvChipsPerHostBounds], ",", "x"))
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", TPUEnvChipsPerHostBounds, err))
	}
	if len(errs) == 0 {
		if e.Slice, err = NewSlice(topo, chip); err != nil {
			errs = append(errs, err)
		}
	}
	e.WorkerID, err = strconv.Atoi(kv[TPUEnvWorkerID])
	if err != nil {
		errs = append(errs, fmt.Errorf("%s %q: not a number", TPUEnvWorkerID, kv[TPUEnvWorkerID]))
	} else if len(errs) == 0 && (e.WorkerID < 0 || e.WorkerID >= e.Slice.Hosts()) {
		errs = append(errs, fmt.Errorf("%s %d: want 0..%d", TPUEnvWorkerID, e.WorkerID, e.Slice.Hosts()-1))
	}
	e.SliceName = kv[TPUEnvSliceName]
	if len(errs) > 0 {
		return TPUEnv{}, fmt.Errorf("%w: %w", ErrTPUEnv, errors.Join(errs...))
	}
	return e, nil
}

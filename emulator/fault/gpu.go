package fault

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/render"
)

var (
	// ErrUnknownDevice is returned for a target no GPU or MIG device of the
	// root has.
	ErrUnknownDevice = errors.New("no such GPU or MIG device")
	// ErrMIGTarget is returned for a MIG device given to a fault of whole
	// GPUs (throttle, lose, reset), or a GPU given to lose-mig.
	ErrMIGTarget = errors.New("wrong kind of device")
	// ErrLost is returned for a fault on a GPU that fell off the bus (reset
	// it first).
	ErrLost = errors.New("the GPU is lost")
	// ErrInvalid classifies bad arguments (a throttle reason, a
	// temperature, an ECC count).
	ErrInvalid = errors.New("invalid fault")
)

// lostDir keeps the device nodes of lost GPUs, relative to the root, so
// Reset puts back the very node Lose took away.
const lostDir = "run/drakit-emulator/lost"

// device is a resolved target: a GPU, and the compute instance when the
// target is a MIG device.
type device struct {
	name string // as the caller named it
	gpu  nvmlstate.GPU
	ci   *nvmlstate.ComputeInstance
}

func (d device) String() string {
	if d.ci != nil {
		return fmt.Sprintf("MIG device %s (GPU %s, GI %d, CI %d)", d.ci.UUID, d.gpu.UUID, d.ci.GI, d.ci.ID)
	}
	return fmt.Sprintf("GPU %s (minor %d, %s)", d.gpu.UUID, d.gpu.Minor, d.gpu.BusID)
}

// ids are the GI and CI ids an event of d carries.
func (d device) ids() (gi, ci uint32) {
	if d.ci == nil {
		return nvmlstate.NoInstance, nvmlstate.NoInstance
	}
	return uint32(d.ci.GI), uint32(d.ci.ID)
}

// resolve finds the device target names: GPU-<uuid>, MIG-<uuid>, a PCI
// bus id (NVML's 00000000:1B:00.0 or sysfs' 0000:1b:00.0) or a minor.
func resolve(s *nvmlstate.State, target string) (device, error) {
	d := device{name: target}
	var match func(g nvmlstate.GPU) bool
	switch {
	case target == "":
		return d, fmt.Errorf("%w: target: required (GPU-<uuid>, MIG-<uuid>, PCI bus id or minor)", ErrInvalid)
	case hasPrefixFold(target, "MIG-"):
		for i, c := range s.ComputeInstances {
			if strings.EqualFold(c.UUID, target) {
				d.ci = &s.ComputeInstances[i]
				match = func(g nvmlstate.GPU) bool { return g.Minor == c.GPU }
			}
		}
	case hasPrefixFold(target, "GPU-"):
		match = func(g nvmlstate.GPU) bool { return strings.EqualFold(g.UUID, target) }
	case strings.Contains(target, ":"):
		want, ok := parseBusID(target)
		if !ok {
			return d, fmt.Errorf("%w: target %q is not a PCI bus id (domain:bus:device.function)", ErrInvalid, target)
		}
		match = func(g nvmlstate.GPU) bool { have, _ := parseBusID(g.BusID); return have == want }
	default:
		minor, err := strconv.Atoi(target)
		if err != nil {
			return d, fmt.Errorf("%w: target %q is none of GPU-<uuid>, MIG-<uuid>, PCI bus id, minor", ErrInvalid, target)
		}
		match = func(g nvmlstate.GPU) bool { return g.Minor == minor }
	}
	for _, g := range s.GPUs {
		if match != nil && match(g) {
			d.gpu = g
			return d, nil
		}
	}
	return d, fmt.Errorf("device %s: %w (the root has %s)", target, ErrUnknownDevice, inventory(s))
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// parseBusID reads domain:bus:device.function in hex of either case.
func parseBusID(s string) ([4]uint64, bool) {
	var out [4]uint64
	rest, fn, ok := strings.Cut(s, ".")
	parts := strings.Split(rest, ":")
	if !ok || len(parts) != 3 {
		return out, false
	}
	for i, p := range append(parts, fn) {
		v, err := strconv.ParseUint(p, 16, 32)
		if err != nil || p == "" {
			return out, false
		}
		out[i] = v
	}
	return out, true
}

func inventory(s *nvmlstate.State) string {
	var names []string
	for _, g := range s.GPUs {
		names = append(names, fmt.Sprintf("%s (minor %d, %s)", g.UUID, g.Minor, g.BusID))
	}
	for _, c := range s.ComputeInstances {
		names = append(names, c.UUID)
	}
	if len(names) == 0 {
		return "no GPUs"
	}
	return strings.Join(names, ", ")
}

// update resolves target in root's state and calls fn under
// nvmlstate.Update; faults on a lost GPU are ErrLost unless allowLost.
//
// fn may change device nodes NVML clients look at (lose moves
// /dev/nvidia<minor> away, reset brings it back, lose-mig removes a
// capability node) before the state is rewritten; Update's generation bump,
// after its rename, tells clients of both. When the update fails after fn
// was called (fn's own error included: it may have moved a node first),
// nothing was renamed and update bumps the generation itself, so a
// long-lived client still notices the changed nodes at its next call.
func update(root, target, op string, allowLost bool, fn func(s *nvmlstate.State, d device) error) error {
	ran := false
	err := nvmlstate.Update(root, func(s *nvmlstate.State) error {
		d, err := resolve(s, target)
		if err != nil {
			return err
		}
		if !allowLost && s.FaultOf(d.gpu.Minor).Lost {
			return fmt.Errorf("%s: %w: it fell off the bus (reset it first)", d, ErrLost)
		}
		ran = true
		return fn(s, d)
	})
	if err != nil && ran {
		if berr := nvmlstate.BumpGeneration(root); berr != nil {
			err = errors.Join(err, berr)
		}
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, target, err)
	}
	return nil
}

func now() uint64 { return uint64(time.Now().UnixMicro()) }

// ECC adds single-bit and double-bit ECC errors to target (a GPU, or a MIG
// device: its GPU counts them, its events carry its ids): volatile and
// aggregate counts rise by single and double, and one sbe and one dbe
// event (eventData the count added) is logged for each that is not 0.
func ECC(root, target string, single, double uint64) error {
	if single == 0 && double == 0 {
		return fmt.Errorf("ecc %s: %w: single and double are both 0", target, ErrInvalid)
	}
	return update(root, target, "ecc", false, func(s *nvmlstate.State, d device) error {
		f := s.FaultOf(d.gpu.Minor)
		f.SBEVolatile += single
		f.SBEAggregate += single
		f.DBEVolatile += double
		f.DBEAggregate += double
		s.SetFault(f)
		gi, ci := d.ids()
		for _, e := range []struct {
			t nvmlstate.EventType
			n uint64
		}{{nvmlstate.EventSBE, single}, {nvmlstate.EventDBE, double}} {
			if e.n > 0 {
				s.AppendEvent(nvmlstate.Event{Type: e.t, GPU: d.gpu.Minor, GI: gi, CI: ci, Data: e.n, Time: now()})
			}
		}
		return nil
	})
}

// ParseClocksEventReasons reads a comma-separated list of
// nvmlstate.ClocksEventReasons names ("" or "none": no reason).
func ParseClocksEventReasons(list string) (uint64, error) {
	var mask uint64
	if list == "" || list == "none" {
		return 0, nil
	}
	for _, name := range strings.Split(list, ",") {
		found := false
		for _, r := range nvmlstate.ClocksEventReasons {
			if r.Name == strings.TrimSpace(name) {
				mask |= r.Bit
				found = true
			}
		}
		if !found {
			var names []string
			for _, r := range nvmlstate.ClocksEventReasons {
				names = append(names, r.Name)
			}
			return 0, fmt.Errorf("%w: reasons: unknown clocks event reason %q (known: %s)", ErrInvalid, name, strings.Join(names, ", "))
		}
	}
	return mask, nil
}

// Throttle sets a GPU's clocks event (throttle) reasons, replacing the
// ones it had, and its temperature when Temperature is not nil.
type Throttle struct {
	Reasons     uint64 // nvmlstate.ClocksEventReasons bits
	Temperature *int   // °C, 0..nvmlstate.MaxTemperature
}

// SetThrottle applies t to the GPU target.
func SetThrottle(root, target string, t Throttle) error {
	if t.Reasons&^nvmlstate.AllClocksEventReasons != 0 {
		return fmt.Errorf("throttle %s: %w: reasons 0x%X has bits outside 0x%X", target, ErrInvalid, t.Reasons, nvmlstate.AllClocksEventReasons)
	}
	if t.Temperature != nil && (*t.Temperature < 0 || *t.Temperature > nvmlstate.MaxTemperature) {
		return fmt.Errorf("throttle %s: %w: temperature %d out of range 0..%d", target, ErrInvalid, *t.Temperature, nvmlstate.MaxTemperature)
	}
	return update(root, target, "throttle", false, func(s *nvmlstate.State, d device) error {
		if d.ci != nil {
			return fmt.Errorf("%s: %w: throttling is a whole GPU's; name its GPU", d, ErrMIGTarget)
		}
		f := s.FaultOf(d.gpu.Minor)
		f.ClocksEventReasons = t.Reasons
		if t.Temperature != nil {
			f.Temperature = *t.Temperature
		}
		s.SetFault(f)
		return nil
	})
}

// Lose makes the GPU target fall off the bus: an Xid 79 event, the fault
// state lost, and its device node /dev/nvidia<minor> moved away (to
// run/drakit-emulator/lost, where Reset takes it back from). NVML then
// answers NVML_ERROR_GPU_IS_LOST on every handle of it and no longer
// enumerates it. A GPU already lost is ErrLost.
func Lose(root, target string) error {
	return update(root, target, "lose", false, func(s *nvmlstate.State, d device) error {
		if d.ci != nil {
			return fmt.Errorf("%s: %w: lose takes a GPU (use lose-mig for a MIG device)", d, ErrMIGTarget)
		}
		return lose(root, s, d, xidFallenOffTheBus)
	})
}

// lose logs Xid code on d's GPU, marks it lost and moves its node away.
func lose(root string, s *nvmlstate.State, d device, code uint64) error {
	gi, ci := d.ids()
	s.AppendEvent(nvmlstate.Event{Type: nvmlstate.EventXid, GPU: d.gpu.Minor, GI: gi, CI: ci, Data: code, Time: now()})
	f := s.FaultOf(d.gpu.Minor)
	f.Lost = true
	f.RecoveryAction = stronger(f.RecoveryAction, nvmlstate.RecoveryNodeReboot)
	s.SetFault(f)
	node := filepath.Join(root, "dev", fmt.Sprintf("nvidia%d", d.gpu.Minor))
	aside := filepath.Join(root, lostDir, fmt.Sprintf("nvidia%d", d.gpu.Minor))
	if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
		return err
	}
	if err := os.Rename(node, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: remove its device node: %w", d, err)
	}
	return nil
}

// LoseMIG makes the MIG device target vanish: an Xid event (code) with its
// GI and CI ids, then its compute instance goes as a destroy would (its ci
// record, its capability access file and directory, and its
// /dev/nvidia-caps node). Its GPU instance stays.
func LoseMIG(root, target string, code uint64) error {
	return update(root, target, "lose-mig", false, func(s *nvmlstate.State, d device) error {
		if d.ci == nil {
			return fmt.Errorf("%s: %w: lose-mig takes a MIG-<uuid> (use lose for a GPU)", d, ErrMIGTarget)
		}
		gi, ci := d.ids()
		s.AppendEvent(nvmlstate.Event{Type: nvmlstate.EventXid, GPU: d.gpu.Minor, GI: gi, CI: ci, Data: code, Time: now()})
		c := *d.ci
		var kept []nvmlstate.ComputeInstance
		for _, o := range s.ComputeInstances {
			if o.UUID != c.UUID {
				kept = append(kept, o)
			}
		}
		s.ComputeInstances = kept
		dir := filepath.Join(root, fmt.Sprintf("proc/driver/nvidia/capabilities/gpu%d/mig/gi%d/ci%d", c.GPU, c.GI, c.ID))
		for _, p := range []string{
			filepath.Join(dir, "access"), dir,
			filepath.Join(root, fmt.Sprintf("dev/nvidia-caps/nvidia-cap%d", c.CapMinor)),
		} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: remove %s: %w", d, p, err)
			}
		}
		return nil
	})
}

// Reset does what nvidia-smi -r (or reseating the GPU) does: volatile ECC
// counts 0, a pending page retirement applied (one more double-bit page)
// and a pending row remapping applied (one more uncorrectable row), the
// remap failure cleared, recovery action none, no throttling at the
// default temperature, and a lost GPU back with its device node. Aggregate
// counts and events stay.
func Reset(root, target string) error {
	return update(root, target, "reset", true, func(s *nvmlstate.State, d device) error {
		if d.ci != nil {
			return fmt.Errorf("%s: %w: a reset is a whole GPU's; name its GPU", d, ErrMIGTarget)
		}
		f := s.FaultOf(d.gpu.Minor)
		if f.Lost {
			if err := restoreNode(root, d.gpu.Minor); err != nil {
				return fmt.Errorf("%s: %w", d, err)
			}
		}
		if f.RetiredPending {
			f.RetiredDBE++
		}
		if f.RemapPending {
			f.RemappedUncorrectable++
		}
		f.SBEVolatile, f.DBEVolatile = 0, 0
		f.RetiredPending, f.RemapPending, f.RemapFailure, f.Lost = false, false, false, false
		f.RecoveryAction = nvmlstate.RecoveryNone
		f.ClocksEventReasons = 0
		f.Temperature = nvmlstate.DefaultTemperature
		s.SetFault(f)
		return nil
	})
}

// restoreNode puts back the node Lose moved away, or makes a new one
// (character device 195:minor, crw-rw-rw-, as render does).
func restoreNode(root string, minor int) error {
	node := filepath.Join(root, "dev", fmt.Sprintf("nvidia%d", minor))
	aside := filepath.Join(root, lostDir, fmt.Sprintf("nvidia%d", minor))
	err := os.Rename(aside, node)
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, err := os.Lstat(node); err == nil {
		return nil
	}
	if err := unix.Mknod(node, unix.S_IFCHR|0o666, int(unix.Mkdev(render.NvidiaMajor, uint32(minor)))); err != nil {
		return fmt.Errorf("create its device node %s: %w", node, err)
	}
	return os.Chmod(node, 0o666)
}

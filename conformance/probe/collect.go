package probe

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// DevPath is where the probe reports device nodes to be, whatever directory
// Options.DevRoot scans.
const DevPath = "/dev"

// Library is the part of NVML the probe uses. The default, NewNVML, loads
// libnvidia-ml.so.1 through github.com/NVIDIA/go-nvml; tests pass a fake.
type Library interface {
	// Init loads and initializes the library. An error means no other
	// method may be called.
	Init() error
	// Shutdown releases what Init acquired.
	Shutdown() error
	DriverVersion() (string, error)
	// Count is the number of GPUs NVML can see.
	Count() (int, error)
	// GPU describes the GPU at index. On error it returns the fields it
	// could read together with an error naming the calls that failed.
	GPU(index int) (GPU, error)
}

// Options say where Collect looks.
type Options struct {
	// DevRoot is the directory scanned for device nodes; nodes are reported
	// under DevPath as if DevRoot were mounted there. Default /dev.
	DevRoot string
	// Environ is the environment in os.Environ form. Nil means os.Environ().
	Environ []string
	// NVML is the NVML library. Nil means NewNVML(DefaultNVMLLibrary).
	NVML Library
	// MountInfo is the mount table to report. Default
	// /proc/self/mountinfo.
	MountInfo string
	// MetadataRoot is the directory whose files are reported as device
	// metadata files (KEP-5304), under MetadataPath as if MetadataRoot
	// were mounted there; a missing directory has none, and empty reads
	// none. Default MetadataPath.
	MetadataRoot string
}

// DefaultOptions returns the options the probe binary uses inside a pod.
func DefaultOptions() Options {
	return Options{DevRoot: DevPath, MountInfo: "/proc/self/mountinfo", MetadataRoot: MetadataPath}
}

// Validate reports the first invalid field.
func (o Options) Validate() error {
	if o.DevRoot == "" {
		return errors.New("probe options: DevRoot: must not be empty")
	}
	if o.MountInfo == "" {
		return errors.New("probe options: MountInfo: must not be empty")
	}
	return nil
}

// Collect gathers the report. It fails only when the device tree, the
// mount table or the device metadata files cannot be read; NVML problems
// are recorded in Report.NVML (Unavailable, Error).
func Collect(ctx context.Context, opts Options) (Report, error) {
	if err := opts.Validate(); err != nil {
		return Report{}, err
	}
	logger := klog.FromContext(ctx)
	devices, err := scanDevices(opts.DevRoot)
	if err != nil {
		return Report{}, err
	}
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ()
	}
	lib := opts.NVML
	if lib == nil {
		lib = NewNVML(DefaultNVMLLibrary)
	}
	mounts, err := readMounts(opts.MountInfo)
	if err != nil {
		return Report{}, err
	}
	metadata, err := readMetadata(opts.MetadataRoot)
	if err != nil {
		return Report{}, err
	}
	report := Report{Devices: devices, Env: parseEnviron(environ), NVML: collectNVML(lib), Mounts: mounts, Metadata: metadata}
	logger.V(2).Info("Collected probe report", "devices", len(report.Devices), "gpus", len(report.NVML.GPUs), "nvmlUnavailable", report.NVML.Unavailable, "nvmlError", report.NVML.Error, "metadataFiles", len(report.Metadata))
	return report, nil
}

// scanDevices walks root recursively, without following symbolic links, and
// returns its character and block device nodes sorted by path.
func scanDevices(root string) ([]DeviceNode, error) {
	devices := []DeviceNode{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return fmt.Errorf("scan device root %s: %w", root, err)
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil // vanished while walking
			}
			return fmt.Errorf("scan device tree %s: %w", p, err)
		}
		if d.Type()&fs.ModeDevice == 0 {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("stat device node %s: %w", p, err)
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("stat device node %s: no device numbers on this platform", p)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return fmt.Errorf("relativize device node %s: %w", p, err)
		}
		typ := BlockDevice
		if d.Type()&fs.ModeCharDevice != 0 {
			typ = CharDevice
		}
		rdev := uint64(st.Rdev) //nolint:unconvert // Rdev is uint32 on some platforms
		devices = append(devices, DeviceNode{
			Path:  path.Join(DevPath, filepath.ToSlash(rel)),
			Type:  typ,
			Major: unix.Major(rdev),
			Minor: unix.Minor(rdev),
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(devices, func(i, j int) bool { return devices[i].Path < devices[j].Path })
	return devices, nil
}

// parseEnviron turns KEY=value entries into a map; for repeated keys the last
// one wins, as with getenv in most libcs' setenv order.
func parseEnviron(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" {
			continue
		}
		env[k] = v
	}
	return env
}

// collectNVML enumerates every GPU and records the failures of an
// initialized NVML in NVML.Error; one that cannot be initialized is
// NVML.Unavailable.
func collectNVML(lib Library) (out NVML) {
	out.GPUs = []GPU{}
	if err := lib.Init(); err != nil {
		out.Unavailable = fmt.Sprintf("initialize NVML: %v", err)
		return out
	}
	var errs []string
	defer func() {
		if err := lib.Shutdown(); err != nil {
			errs = append(errs, fmt.Sprintf("shut down NVML: %v", err))
		}
		out.Error = strings.Join(errs, "; ")
	}()
	version, err := lib.DriverVersion()
	if err != nil {
		errs = append(errs, fmt.Sprintf("get driver version: %v", err))
	}
	out.DriverVersion = version
	count, err := lib.Count()
	if err != nil {
		errs = append(errs, fmt.Sprintf("count GPUs: %v", err))
		return out
	}
	for i := 0; i < count; i++ {
		gpu, err := lib.GPU(i)
		gpu.Index = i
		if err != nil {
			errs = append(errs, fmt.Sprintf("GPU %d: %v", i, err))
		}
		out.GPUs = append(out.GPUs, gpu)
	}
	return out
}

// readMounts parses a mountinfo file: the mount point is field 5 (octal
// escapes for space, tab, newline and backslash), the mount's own options
// field 6.
func readMounts(path string) ([]Mount, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	mounts := []Mount{}
	for n, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 6 {
			return nil, fmt.Errorf("read mounts: %s line %d: %q has too few fields", path, n+1, line)
		}
		readOnly := false
		for _, o := range strings.Split(fields[5], ",") {
			readOnly = readOnly || o == "ro"
		}
		mounts = append(mounts, Mount{Path: unescapeMountPath(fields[4]), ReadOnly: readOnly})
	}
	return mounts, nil
}

// unescapeMountPath undoes the kernel's \NNN octal escapes.
func unescapeMountPath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range []byte(s[i+1 : i+4]) {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + (c - '0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

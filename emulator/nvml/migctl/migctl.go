package migctl

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

var (
	// ErrInvalid classifies bad input: configuration (a library that is
	// not NVML), GPU index, a GPU that is not MIG capable, profile name,
	// placement.
	ErrInvalid = errors.New("invalid MIG request")
	// ErrMIGDisabled is returned for creating or destroying instances on a
	// MIG-capable GPU whose MIG mode is off.
	ErrMIGDisabled = errors.New("MIG mode is disabled")
)

// InstancesError is returned for disabling MIG mode of a GPU that still has
// GPU instances; it wraps NVML's nvml.ERROR_IN_USE.
type InstancesError struct {
	GPU          int   // NVML index
	GPUInstances []int // GI ids, ascending
	Err          error // nvml.ERROR_IN_USE
}

func (e *InstancesError) Error() string {
	ids := make([]string, len(e.GPUInstances))
	for i, id := range e.GPUInstances {
		ids[i] = strconv.Itoa(id)
	}
	what, them := fmt.Sprintf("%d GPU instances", len(ids)), "them"
	if len(ids) == 1 {
		what, them = "1 GPU instance", "it"
	}
	return fmt.Sprintf("disable MIG mode of GPU %d: it still has %s (GI %s); destroy %s first",
		e.GPU, what, strings.Join(ids, ", "), them)
}

func (e *InstancesError) Unwrap() error { return e.Err }

// rootEnv is the shim's root variable (emulator/nvmlstate).
const rootEnv = "DRAKIT_EMULATOR_ROOT"

// Config says which emulated node to manage.
type Config struct {
	// Root is the emulator root. Required.
	Root string
	// Library is the NVML library to load; empty: the shim under Root.
	Library string
}

// DefaultConfig returns a Config with every default set except Root.
func DefaultConfig() Config { return Config{} }

// Default fills Library from Root.
func (c *Config) Default() {
	if c.Library == "" && c.Root != "" {
		c.Library = filepath.Join(c.Root, "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
	}
}

// Validate checks c after Default.
func (c *Config) Validate() error {
	if c.Root == "" {
		return fmt.Errorf("%w: root: required", ErrInvalid)
	}
	if c.Library == "" {
		return fmt.Errorf("%w: library: required", ErrInvalid)
	}
	return nil
}

// Session is an initialised NVML over one emulator root.
type Session struct {
	lib nvml.Interface
}

// Open loads cfg's library and initialises NVML over cfg.Root.
func Open(cfg Config) (*Session, error) {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(cfg.Library); err != nil {
		return nil, fmt.Errorf("open NVML library %s: %w", cfg.Library, err)
	}
	if err := checkLibrary(cfg.Library); err != nil {
		return nil, err
	}
	if err := os.Setenv(rootEnv, cfg.Root); err != nil {
		return nil, fmt.Errorf("set %s: %w", rootEnv, err)
	}
	lib := nvml.New(nvml.WithLibraryPath(cfg.Library))
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("initialise NVML over %s: %w", cfg.Root, ret)
	}
	return &Session{lib: lib}, nil
}

// requiredSymbols are the NVML functions a Session calls. go-nvml binds
// them lazily, so a library without one kills the process with a symbol
// lookup error at the first call; Open checks for them first.
var requiredSymbols = []string{
	"nvmlInit_v2", "nvmlShutdown", "nvmlErrorString",
	"nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetName", "nvmlDeviceGetUUID",
	"nvmlDeviceGetMigMode", "nvmlDeviceSetMigMode",
	"nvmlDeviceGetGpuInstanceProfileInfoV", "nvmlDeviceGetGpuInstancePossiblePlacements_v2",
	"nvmlDeviceGetGpuInstances", "nvmlDeviceGetGpuInstanceById",
	"nvmlDeviceCreateGpuInstance", "nvmlDeviceCreateGpuInstanceWithPlacement",
	"nvmlGpuInstanceGetInfo", "nvmlGpuInstanceGetComputeInstanceProfileInfoV",
	"nvmlGpuInstanceGetComputeInstances", "nvmlGpuInstanceGetComputeInstanceById",
	"nvmlGpuInstanceCreateComputeInstance", "nvmlGpuInstanceDestroy",
	"nvmlComputeInstanceGetInfo_v2", "nvmlComputeInstanceDestroy",
}

// elfMachine is the ELF machine of this process's architecture.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[runtime.GOARCH]

// checkLibrary reports, without loading it, whether path is a shared
// library for this architecture that defines every required NVML function.
func checkLibrary(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%w: library %s is not an ELF shared library: %v", ErrInvalid, path, err)
	}
	defer f.Close()
	switch {
	case f.Type != elf.ET_DYN:
		return fmt.Errorf("%w: library %s is not a shared library (ELF type %v)", ErrInvalid, path, f.Type)
	case f.Machine != elfMachine:
		return fmt.Errorf("%w: library %s is built for %v, not %v", ErrInvalid, path, f.Machine, elfMachine)
	}
	syms, err := f.DynamicSymbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return fmt.Errorf("%w: library %s: read its dynamic symbols: %v", ErrInvalid, path, err)
	}
	defined := map[string]bool{}
	for _, sym := range syms {
		if sym.Section != elf.SHN_UNDEF {
			defined[sym.Name] = true
		}
	}
	var missing []string
	for _, name := range requiredSymbols {
		if !defined[name] {
			missing = append(missing, name)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%w: library %s is not an NVML library: it does not export %s", ErrInvalid, path, missing[0])
	}
	return fmt.Errorf("%w: library %s is not an NVML library: it does not export %s and %d other NVML functions a session calls",
		ErrInvalid, path, missing[0], len(missing)-1)
}

// Close shuts NVML down.
func (s *Session) Close() error {
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("shut down NVML: %w", ret)
	}
	return nil
}

// GPU is one GPU as List reports it.
type GPU struct {
	Index      int
	Name       string
	UUID       string
	MIGCapable bool
	MIGMode    bool
	Instances  []GPUInstance
}

// GPUInstance is a GPU instance and its compute instances.
type GPUInstance struct {
	ID               int
	Profile          string
	Start, Size      int
	ComputeInstances []ComputeInstance
}

// ComputeInstance is a compute instance: one MIG device.
type ComputeInstance struct {
	ID          int
	Profile     string
	Start, Size int
	UUID        string
}

func (s *Session) device(index int) (nvml.Device, error) {
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("count GPUs: %w", ret)
	}
	if index < 0 || index >= n {
		return nil, fmt.Errorf("%w: GPU index %d: the node has GPUs 0..%d", ErrInvalid, index, n-1)
	}
	d, ret := s.lib.DeviceGetHandleByIndex(index)
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("get GPU %d: %w", index, ret)
	}
	return d, nil
}

func int8String(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// giProfiles returns the GPU's GI profiles (v1 info and name), by NVML
// index. The v1 info is complete: go-nvml sizes instance buffers by its
// InstanceCount.
func giProfiles(d nvml.Device) ([]nvml.GpuInstanceProfileInfo, []string) {
	var infos []nvml.GpuInstanceProfileInfo
	var names []string
	for i := 0; i < nvml.GPU_INSTANCE_PROFILE_COUNT; i++ {
		v2, ret := d.GetGpuInstanceProfileInfoV(i).V2()
		if ret != nvml.SUCCESS {
			continue
		}
		infos = append(infos, nvml.GpuInstanceProfileInfo{Id: v2.Id, IsP2pSupported: v2.IsP2pSupported,
			SliceCount: v2.SliceCount, InstanceCount: v2.InstanceCount, MultiprocessorCount: v2.MultiprocessorCount,
			CopyEngineCount: v2.CopyEngineCount, DecoderCount: v2.DecoderCount, EncoderCount: v2.EncoderCount,
			JpegCount: v2.JpegCount, OfaCount: v2.OfaCount, MemorySizeMB: v2.MemorySizeMB})
		names = append(names, int8String(v2.Name[:]))
	}
	return infos, names
}

// ciProfiles returns a GI's CI profiles and names.
func ciProfiles(gi nvml.GpuInstance) ([]nvml.ComputeInstanceProfileInfo, []string) {
	var infos []nvml.ComputeInstanceProfileInfo
	var names []string
	for i := 0; i < nvml.COMPUTE_INSTANCE_PROFILE_COUNT; i++ {
		v2, ret := gi.GetComputeInstanceProfileInfoV(i, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED).V2()
		if ret != nvml.SUCCESS {
			continue
		}
		infos = append(infos, nvml.ComputeInstanceProfileInfo{Id: v2.Id, SliceCount: v2.SliceCount,
			InstanceCount: v2.InstanceCount, MultiprocessorCount: v2.MultiprocessorCount,
			SharedCopyEngineCount: v2.SharedCopyEngineCount, SharedDecoderCount: v2.SharedDecoderCount,
			SharedEncoderCount: v2.SharedEncoderCount, SharedJpegCount: v2.SharedJpegCount, SharedOfaCount: v2.SharedOfaCount})
		names = append(names, int8String(v2.Name[:]))
	}
	return infos, names
}

// List reports every GPU with its MIG mode and instances.
func (s *Session) List() ([]GPU, error) {
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("count GPUs: %w", ret)
	}
	var out []GPU
	for i := range n {
		d, err := s.device(i)
		if err != nil {
			return nil, err
		}
		g := GPU{Index: i}
		g.Name, _ = d.GetName()
		g.UUID, _ = d.GetUUID()
		cur, _, ret := d.GetMigMode()
		g.MIGCapable, g.MIGMode = ret == nvml.SUCCESS, ret == nvml.SUCCESS && cur == nvml.DEVICE_MIG_ENABLE
		if g.MIGMode {
			if g.Instances, err = instances(d); err != nil {
				return nil, fmt.Errorf("list instances of GPU %d: %w", i, err)
			}
		}
		out = append(out, g)
	}
	return out, nil
}

func instances(d nvml.Device) ([]GPUInstance, error) {
	var out []GPUInstance
	infos, names := giProfiles(d)
	for k := range infos {
		gis, ret := d.GetGpuInstances(&infos[k])
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("GPU instances of %s: %w", names[k], ret)
		}
		for _, gi := range gis {
			info, ret := gi.GetInfo()
			if ret != nvml.SUCCESS {
				return nil, fmt.Errorf("GPU instance info: %w", ret)
			}
			g := GPUInstance{ID: int(info.Id), Profile: names[k], Start: int(info.Placement.Start), Size: int(info.Placement.Size)}
			cinfos, cnames := ciProfiles(gi)
			for j := range cinfos {
				cis, ret := gi.GetComputeInstances(&cinfos[j])
				if ret != nvml.SUCCESS {
					return nil, fmt.Errorf("compute instances of %s in GI %d: %w", cnames[j], g.ID, ret)
				}
				for _, ci := range cis {
					ci, err := computeInstance(ci, cnames[j])
					if err != nil {
						return nil, err
					}
					g.ComputeInstances = append(g.ComputeInstances, ci)
				}
			}
			slices.SortFunc(g.ComputeInstances, func(a, b ComputeInstance) int { return cmp.Compare(a.ID, b.ID) })
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b GPUInstance) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

func computeInstance(ci nvml.ComputeInstance, profile string) (ComputeInstance, error) {
	info, ret := ci.GetInfo()
	if ret != nvml.SUCCESS {
		return ComputeInstance{}, fmt.Errorf("compute instance info: %w", ret)
	}
	uuid, ret := info.Device.GetUUID()
	if ret != nvml.SUCCESS {
		return ComputeInstance{}, fmt.Errorf("UUID of compute instance %d: %w", info.Id, ret)
	}
	return ComputeInstance{ID: int(info.Id), Profile: profile, Start: int(info.Placement.Start),
		Size: int(info.Placement.Size), UUID: uuid}, nil
}

// SetMode turns MIG mode of GPU index on or off.
func (s *Session) SetMode(index int, enabled bool) error {
	d, err := s.device(index)
	if err != nil {
		return err
	}
	mode, verb := nvml.DEVICE_MIG_DISABLE, "disable"
	if enabled {
		mode, verb = nvml.DEVICE_MIG_ENABLE, "enable"
	}
	_, ret := d.SetMigMode(mode)
	if ret == nvml.ERROR_IN_USE && !enabled {
		if gis, err := instances(d); err == nil && len(gis) > 0 {
			e := &InstancesError{GPU: index, Err: ret}
			for _, gi := range gis {
				e.GPUInstances = append(e.GPUInstances, gi.ID)
			}
			return e
		}
	}
	if ret != nvml.SUCCESS {
		return fmt.Errorf("%s MIG mode of GPU %d: %w", verb, index, ret)
	}
	return nil
}

// migDevice returns GPU index for a change of its MIG instances: one that
// is MIG capable (else ErrInvalid) with MIG mode on (else ErrMIGDisabled,
// with what the caller was doing).
func (s *Session) migDevice(index int, doing string) (nvml.Device, error) {
	d, err := s.device(index)
	if err != nil {
		return nil, err
	}
	cur, _, ret := d.GetMigMode()
	switch {
	case ret == nvml.ERROR_NOT_SUPPORTED:
		return nil, fmt.Errorf("%s: %w: GPU %d is not MIG capable", doing, ErrInvalid, index)
	case ret != nvml.SUCCESS:
		return nil, fmt.Errorf("%s: get MIG mode of GPU %d: %w", doing, index, ret)
	case cur != nvml.DEVICE_MIG_ENABLE:
		return nil, fmt.Errorf("%s: %w", doing, ErrMIGDisabled)
	}
	return d, nil
}

// CreateRequest is one GPU instance with one compute instance to create.
type CreateRequest struct {
	GPU int
	// GIProfile is the GI profile name, e.g. 3g.40gb. Required.
	GIProfile string
	// Placement is the GI's start memory slice; nil: NVML chooses.
	Placement *int
	// CIProfile is the CI profile name; empty: the one spanning the GI.
	CIProfile string
}

// Validate checks what r says without NVML: a GI profile, and a
// placement, when given, of 0 or more.
func (r CreateRequest) Validate() error {
	switch {
	case r.GIProfile == "":
		return fmt.Errorf("%w: GPU instance profile: required", ErrInvalid)
	case r.Placement != nil && *r.Placement < 0:
		return fmt.Errorf("%w: placement %d: a placement is a start memory slice, 0 or more; nil lets NVML choose", ErrInvalid, *r.Placement)
	}
	return nil
}

// Create creates r's GPU instance and compute instance; when the compute
// instance cannot be created the GPU instance is destroyed again.
func (s *Session) Create(r CreateRequest) (GPUInstance, error) {
	if err := r.Validate(); err != nil {
		return GPUInstance{}, err
	}
	d, err := s.migDevice(r.GPU, fmt.Sprintf("create GPU instance %s on GPU %d", r.GIProfile, r.GPU))
	if err != nil {
		return GPUInstance{}, err
	}
	infos, names := giProfiles(d)
	k := indexOf(names, r.GIProfile)
	if k < 0 {
		has := strings.Join(names, ", ")
		if len(names) == 0 {
			has = "no GPU instance profiles"
		}
		return GPUInstance{}, fmt.Errorf("%w: GPU instance profile %q: GPU %d has %s", ErrInvalid, r.GIProfile, r.GPU, has)
	}
	var gi nvml.GpuInstance
	var ret nvml.Return
	if r.Placement != nil {
		gi, ret = d.CreateGpuInstanceWithPlacement(&infos[k], &nvml.GpuInstancePlacement{Start: uint32(*r.Placement), Size: memorySlices(d, infos[k])})
	} else {
		gi, ret = d.CreateGpuInstance(&infos[k])
	}
	if ret != nvml.SUCCESS {
		return GPUInstance{}, fmt.Errorf("create GPU instance %s on GPU %d: %w", r.GIProfile, r.GPU, ret)
	}
	cinfos, cnames := ciProfiles(gi)
	j := len(cinfos) - 1
	for i, c := range cinfos {
		if r.CIProfile == "" && c.SliceCount == infos[k].SliceCount {
			j = i
		}
	}
	if r.CIProfile != "" {
		j = indexOf(cnames, r.CIProfile)
	}
	var ci nvml.ComputeInstance
	if j < 0 {
		err = fmt.Errorf("%w: compute instance profile %q: GI profile %s has %s", ErrInvalid, r.CIProfile, r.GIProfile, strings.Join(cnames, ", "))
	} else if ci, ret = gi.CreateComputeInstance(&cinfos[j]); ret != nvml.SUCCESS {
		err = fmt.Errorf("create compute instance %s on GPU %d: %w", cnames[j], r.GPU, ret)
	}
	if err != nil {
		if ret := gi.Destroy(); ret != nvml.SUCCESS {
			err = fmt.Errorf("%w (and destroy the new GPU instance: %w)", err, ret)
		}
		return GPUInstance{}, err
	}
	info, ret := gi.GetInfo()
	if ret != nvml.SUCCESS {
		return GPUInstance{}, fmt.Errorf("GPU instance info: %w", ret)
	}
	c, err := computeInstance(ci, cnames[j])
	if err != nil {
		return GPUInstance{}, err
	}
	return GPUInstance{ID: int(info.Id), Profile: r.GIProfile, Start: int(info.Placement.Start),
		Size: int(info.Placement.Size), ComputeInstances: []ComputeInstance{c}}, nil
}

// memorySlices is the placement size of a GI profile: its placements' size.
func memorySlices(d nvml.Device, info nvml.GpuInstanceProfileInfo) uint32 {
	p, ret := d.GetGpuInstancePossiblePlacements(&info)
	if ret != nvml.SUCCESS || len(p) == 0 {
		return 0
	}
	return p[0].Size
}

// Destroy destroys GPU instance gi of GPU index and its compute instances.
func (s *Session) Destroy(index, gi int) error {
	d, err := s.migDevice(index, fmt.Sprintf("destroy GPU instance %d of GPU %d", gi, index))
	if err != nil {
		return err
	}
	g, ret := d.GetGpuInstanceById(gi)
	if ret != nvml.SUCCESS {
		return fmt.Errorf("get GPU instance %d of GPU %d: %w", gi, index, ret)
	}
	for id := 0; id < 8; id++ {
		ci, ret := g.GetComputeInstanceById(id)
		if ret == nvml.ERROR_NOT_FOUND {
			continue
		}
		if ret != nvml.SUCCESS {
			return fmt.Errorf("get compute instance %d of GI %d: %w", id, gi, ret)
		}
		if ret := ci.Destroy(); ret != nvml.SUCCESS {
			return fmt.Errorf("destroy compute instance %d of GI %d on GPU %d: %w", id, gi, index, ret)
		}
	}
	if ret := g.Destroy(); ret != nvml.SUCCESS {
		return fmt.Errorf("destroy GPU instance %d of GPU %d: %w", gi, index, ret)
	}
	return nil
}

func indexOf(names []string, name string) int { return slices.Index(names, name) }

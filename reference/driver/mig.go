package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// ErrMIGPlacementBusy is returned when NVML refuses to create a GPU instance
// because its placement overlaps an existing one (INSUFFICIENT_RESOURCES).
var ErrMIGPlacementBusy = errors.New("MIG placement is in use")

// migRecord is a dynamic MIG device the driver creates for a claim. It is
// checkpointed before the GPU instance is created (placement only), again
// once the GI exists (GI set) and once the CI exists (CI, UUID and cap
// minors set), so that a restart at any point can find what to destroy.
type migRecord struct {
	ParentUUID   string `json:"parentUUID"`
	ParentMinor  int    `json:"parentMinor"`
	ProfileIndex int    `json:"profileIndex"`
	ProfileID    int    `json:"profileID"`
	Start        int    `json:"start"`
	Size         int    `json:"size"`
	// Slices is the GI profile's compute slice count: the CI spans them.
	Slices     int    `json:"slices"`
	GI         *int   `json:"gi,omitempty"`
	CI         *int   `json:"ci,omitempty"`
	UUID       string `json:"uuid,omitempty"`
	GICapMinor int    `json:"giCapMinor,omitempty"`
	CICapMinor int    `json:"ciCapMinor,omitempty"`
}

// ready reports whether the record describes a complete MIG device.
func (r *migRecord) ready() bool { return r.GI != nil && r.CI != nil && r.UUID != "" }

// migOps creates and destroys MIG devices through NVML. Each call runs in its
// own NVML session (NVML reference-counts Init/Shutdown).
type migOps struct {
	lib        nvml.Interface
	minorsPath string
}

func (m *migOps) session(f func() error) (err error) {
	if m == nil || m.lib == nil {
		return errors.New("NVML is not available to manage MIG devices")
	}
	if ret := m.lib.Init(); ret != nvml.SUCCESS {
		return fmt.Errorf("initialize NVML: %w", ret)
	}
	defer func() {
		if ret := m.lib.Shutdown(); ret != nvml.SUCCESS && err == nil {
			err = fmt.Errorf("shut NVML down: %w", ret)
		}
	}()
	return f()
}

func (r *migRecord) String() string {
	return fmt.Sprintf("MIG profile %d at %d:%d on GPU %d (%s)", r.ProfileID, r.Start, r.Size, r.ParentMinor, r.ParentUUID)
}

// create creates the GPU instance at exactly the record's placement and one
// compute instance spanning it, filling in the record and calling save after
// each step. When save fails, the instance just created is destroyed again.
func (m *migOps) create(ctx context.Context, r *migRecord, save func() error) error {
	return m.session(func() error {
		dev, ret := m.lib.DeviceGetHandleByUUID(r.ParentUUID)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("get GPU %s: %w", r.ParentUUID, ret)
		}
		info, ret := dev.GetGpuInstanceProfileInfo(r.ProfileIndex)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("get MIG profile %d of GPU %s: %w", r.ProfileIndex, r.ParentUUID, ret)
		}
		if int(info.Id) != r.ProfileID {
			return fmt.Errorf("MIG profile index %d of GPU %s has ID %d, want %d", r.ProfileIndex, r.ParentUUID, info.Id, r.ProfileID)
		}
		gi, ret := dev.CreateGpuInstanceWithPlacement(&info, &nvml.GpuInstancePlacement{Start: uint32(r.Start), Size: uint32(r.Size)})
		if ret == nvml.ERROR_INSUFFICIENT_RESOURCES {
			return fmt.Errorf("create GPU instance for %s: %w (%w)", r, ErrMIGPlacementBusy, ret)
		}
		if ret != nvml.SUCCESS {
			return fmt.Errorf("create GPU instance for %s: %w", r, ret)
		}
		giInfo, ret := gi.GetInfo()
		if ret != nvml.SUCCESS {
			return errors.Join(fmt.Errorf("get info of new GPU instance for %s: %w", r, ret), destroyGI(gi))
		}
		r.GI = ptr.To(int(giInfo.Id))
		if err := save(); err != nil {
			r.GI = nil
			return errors.Join(err, destroyGI(gi))
		}
		klog.FromContext(ctx).V(2).Info("Created GPU instance", "gpu", r.ParentUUID, "gi", giInfo.Id, "profile", r.ProfileID, "start", r.Start, "size", r.Size)

		ciProfile, err := fullCIProfile(gi, r.Slices)
		if err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		ci, ret := gi.CreateComputeInstance(&ciProfile)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("create compute instance in GPU instance %d for %s: %w", giInfo.Id, r, ret)
		}
		ciInfo, ret := ci.GetInfo()
		if ret != nvml.SUCCESS {
			return errors.Join(fmt.Errorf("get info of new compute instance for %s: %w", r, ret), destroyCI(ci))
		}
		uuid, ret := ciInfo.Device.GetUUID()
		if ret != nvml.SUCCESS {
			return errors.Join(fmt.Errorf("get UUID of new MIG device for %s: %w", r, ret), destroyCI(ci))
		}
		minors, err := readMIGMinors(m.minorsPath)
		if err != nil {
			return errors.Join(err, destroyCI(ci))
		}
		giMinor, ciMinor, err := capMinors(minors, r.ParentMinor, int(giInfo.Id), int(ciInfo.Id))
		if err != nil {
			return errors.Join(err, destroyCI(ci))
		}
		r.CI, r.UUID, r.GICapMinor, r.CICapMinor = ptr.To(int(ciInfo.Id)), uuid, giMinor, ciMinor
		if err := save(); err != nil {
			r.CI, r.UUID, r.GICapMinor, r.CICapMinor = nil, "", 0, 0
			return errors.Join(err, destroyCI(ci))
		}
		klog.FromContext(ctx).V(2).Info("Created MIG device", "gpu", r.ParentUUID, "gi", giInfo.Id, "ci", ciInfo.Id, "uuid", uuid)
		return nil
	})
}

// destroy destroys the record's compute instances and GPU instance. It is
// idempotent: instances that are already gone are success. A GPU instance
// whose id is not recorded (a crash right after its creation) is found by
// the record's profile and placement.
func (m *migOps) destroy(ctx context.Context, r *migRecord) error {
	return m.session(func() error {
		dev, ret := m.lib.DeviceGetHandleByUUID(r.ParentUUID)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("get GPU %s: %w", r.ParentUUID, ret)
		}
		gi, err := m.findGI(dev, r)
		if err != nil || gi == nil {
			return err
		}
		if r.CI != nil {
			ci, ret := gi.GetComputeInstanceById(*r.CI)
			switch ret {
			case nvml.SUCCESS:
				if err := destroyCI(ci); err != nil {
					return fmt.Errorf("%s: %w", r, err)
				}
			case nvml.ERROR_NOT_FOUND, nvml.ERROR_INVALID_ARGUMENT: // already gone
			default:
				return fmt.Errorf("get compute instance %d of %s: %w", *r.CI, r, ret)
			}
		} else {
			// The CI may exist without being recorded: destroy every CI
			// of the profile the driver creates.
			ciProfile, err := fullCIProfile(gi, r.Slices)
			if err != nil {
				return fmt.Errorf("%s: %w", r, err)
			}
			cis, ret := gi.GetComputeInstances(&ciProfile)
			if ret != nvml.SUCCESS && ret != nvml.ERROR_NOT_FOUND {
				return fmt.Errorf("list compute instances of %s: %w", r, ret)
			}
			for _, ci := range cis {
				if err := destroyCI(ci); err != nil {
					return fmt.Errorf("%s: %w", r, err)
				}
			}
		}
		if err := destroyGI(gi); err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		klog.FromContext(ctx).V(2).Info("Destroyed MIG device", "gpu", r.ParentUUID, "profile", r.ProfileID, "start", r.Start, "uuid", r.UUID)
		return nil
	})
}

// findGI returns the record's GPU instance, or nil when it does not exist.
// A GI with the recorded id but another profile or placement is not the
// record's (the id was reused after the instance was destroyed).
func (m *migOps) findGI(dev nvml.Device, r *migRecord) (nvml.GpuInstance, error) {
	matches := func(gi nvml.GpuInstance) (bool, error) {
		info, ret := gi.GetInfo()
		if ret != nvml.SUCCESS {
			return false, fmt.Errorf("get info of a GPU instance of %s: %w", r, ret)
		}
		return int(info.ProfileId) == r.ProfileID && int(info.Placement.Start) == r.Start, nil
	}
	if r.GI != nil {
		gi, ret := dev.GetGpuInstanceById(*r.GI)
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_NOT_FOUND, nvml.ERROR_INVALID_ARGUMENT:
			return nil, nil
		default:
			return nil, fmt.Errorf("get GPU instance %d of %s: %w", *r.GI, r, ret)
		}
		ok, err := matches(gi)
		if err != nil || !ok {
			return nil, err
		}
		return gi, nil
	}
	info, ret := dev.GetGpuInstanceProfileInfo(r.ProfileIndex)
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("get MIG profile %d of GPU %s: %w", r.ProfileIndex, r.ParentUUID, ret)
	}
	gis, ret := dev.GetGpuInstances(&info)
	if ret == nvml.ERROR_NOT_FOUND {
		return nil, nil
	}
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("list GPU instances of %s: %w", r, ret)
	}
	for _, gi := range gis {
		ok, err := matches(gi)
		if err != nil {
			return nil, err
		}
		if ok {
			return gi, nil
		}
	}
	return nil, nil
}

// fullCIProfile finds the compute-instance profile that spans a GI of
// slices compute slices.
func fullCIProfile(gi nvml.GpuInstance, slices int) (nvml.ComputeInstanceProfileInfo, error) {
	for idx := range nvml.COMPUTE_INSTANCE_PROFILE_COUNT {
		p, ret := gi.GetComputeInstanceProfileInfo(idx, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT || ret == nvml.ERROR_NOT_FOUND {
			continue
		}
		if ret != nvml.SUCCESS {
			return nvml.ComputeInstanceProfileInfo{}, fmt.Errorf("get compute instance profile %d: %w", idx, ret)
		}
		if int(p.SliceCount) == slices {
			return p, nil
		}
	}
	return nvml.ComputeInstanceProfileInfo{}, fmt.Errorf("no compute instance profile spans %d slices", slices)
}

func destroyCI(ci nvml.ComputeInstance) error {
	if ret := ci.Destroy(); ret != nvml.SUCCESS && ret != nvml.ERROR_NOT_FOUND {
		return fmt.Errorf("destroy compute instance: %w", ret)
	}
	return nil
}

func destroyGI(gi nvml.GpuInstance) error {
	if ret := gi.Destroy(); ret != nvml.SUCCESS && ret != nvml.ERROR_NOT_FOUND {
		return fmt.Errorf("destroy GPU instance: %w", ret)
	}
	return nil
}

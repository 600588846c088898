package plaindriver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/reference/pluginharness"
)

// Published names.
const (
	attributeIndex  = "index"
	attributeSerial = "serial"
	capacitySize    = "size"
	// deviceSize is every device's size capacity in bytes (1Gi).
	deviceSize = 1 << 30
	// serialFile is the file in a device's directory that holds its serial.
	serialFile = "serial"
)

// device is one device of the node.
type device struct {
	Name   string
	Index  int
	Serial string
}

// deviceName is the name of the device with index i: dev-<i>.
func deviceName(i int) string { return fmt.Sprintf("dev-%d", i) }

// deviceSerial is the serial of the device with index i on node:
// PLN-<first 8 hex digits of the SHA-256 of the node name>-<i>, stable
// across restarts and different on every node.
func deviceSerial(node string, i int) string {
	sum := sha256.Sum256([]byte(node))
	return fmt.Sprintf("PLN-%s-%d", hex.EncodeToString(sum[:4]), i)
}

// nodeDevices returns the node's n devices, dev-0 to dev-<n-1>.
func nodeDevices(node string, n int) []device {
	devs := make([]device, n)
	for i := range devs {
		devs[i] = device{Name: deviceName(i), Index: i, Serial: deviceSerial(node, i)}
	}
	return devs
}

// buildResources is the node's pool: one slice with every device. With
// DefectDuplicateDeviceNames the slice carries one more device, with the
// next index and its serial but named like the first device.
func buildResources(pool, node string, devs []device, defect Defect) resourceslice.DriverResources {
	published := make([]resourceapi.Device, 0, len(devs)+1)
	for _, d := range devs {
		published = append(published, sliceDevice(d))
	}
	if defect == DefectDuplicateDeviceNames {
		n := len(devs)
		published = append(published, sliceDevice(device{Name: devs[0].Name, Index: n, Serial: deviceSerial(node, n)}))
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		pool: {Slices: []resourceslice.Slice{{Devices: published}}},
	}}
}

func sliceDevice(d device) resourceapi.Device {
	return resourceapi.Device{
		Name: d.Name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			attributeIndex:  {IntValue: ptr.To(int64(d.Index))},
			attributeSerial: {StringValue: ptr.To(d.Serial)},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			capacitySize: {Value: *resource.NewQuantity(deviceSize, resource.BinarySI)},
		},
	}
}

// deviceDir is the host directory of a device below the state directory;
// containers get it mounted read-only.
func deviceDir(stateDir, name string) string { return filepath.Join(stateDir, "devices", name) }

// writeDeviceDirs creates <stateDir>/devices/<device>/serial (mode 0644 in
// directories of mode 0755: containers of any user read it) holding the
// serial and a newline. A file with other content is replaced atomically
// (a temporary file renamed over it), so running containers, which have
// the directory mounted, see either content, never a partial one.
func writeDeviceDirs(stateDir string, devs []device) error {
	for _, d := range devs {
		dir := deviceDir(stateDir, d.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create device directory %s: %w", dir, err)
		}
		path := filepath.Join(dir, serialFile)
		want := []byte(d.Serial + "\n")
		switch got, err := os.ReadFile(path); {
		case err == nil && bytes.Equal(got, want):
			continue
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("read serial file %s: %w", path, err)
		}
		if err := pluginharness.WriteFileAtomic(path, want, 0o644); err != nil {
			return fmt.Errorf("write serial file %s: %w", path, err)
		}
	}
	return nil
}

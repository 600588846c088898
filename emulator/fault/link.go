package fault

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	kfs "drakit.dev/drakit/emulator/internal/sysfs"
	"drakit.dev/drakit/internal/nichw"
)

// ErrNoInterface is returned for an interface name that root does not have.
var ErrNoInterface = errors.New("no such network interface")

// SetLink brings the link of the interface ifname of root up or down (see
// the package documentation).
func SetLink(root, ifname string, up bool) error {
	if msg := nichw.ValidInterfaceName(ifname); msg != "" {
		return fmt.Errorf("interface %q: %s", ifname, msg)
	}
	class := filepath.Join(root, "sys/class/net", ifname)
	dir, err := filepath.EvalSymlinks(class)
	if errors.Is(err, fs.ErrNotExist) {
		names, _ := os.ReadDir(filepath.Join(root, "sys/class/net"))
		var have []string
		for _, n := range names {
			have = append(have, n.Name())
		}
		return fmt.Errorf("interface %s: %w in %s (it has: %s)", ifname, ErrNoInterface, root, strings.Join(have, ", "))
	}
	if err != nil {
		return fmt.Errorf("interface %s: %w", ifname, err)
	}
	device, err := filepath.EvalSymlinks(filepath.Join(dir, "device"))
	if err != nil {
		return fmt.Errorf("interface %s: its PCI function: %w", ifname, err)
	}
	address := filepath.Base(device)
	speed := 0
	if up {
		b, err := os.ReadFile(filepath.Join(root, kfs.SpeedRecord(address)))
		if err == nil {
			speed, err = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if err != nil {
			return fmt.Errorf("interface %s: the nominal speed of %s (%s; render the root again): %w",
				ifname, address, kfs.SpeedRecord(address), err)
		}
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	rel := func(p string) string { r, _ := filepath.Rel(realRoot, p); return r }
	es := kfs.LinkFiles(rel(dir), up, speed)
	ibs, _ := os.ReadDir(filepath.Join(device, "infiniband"))
	for _, ib := range ibs {
		es = append(es, kfs.PortFiles(rel(filepath.Join(device, "infiniband", ib.Name())), up, speed)...)
	}
	if err := kfs.Apply(root, es); err != nil {
		return fmt.Errorf("interface %s: set link: %w", ifname, err)
	}
	return nil
}

// Link reports whether the interface's link is up (its carrier).
func Link(root, ifname string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(root, "sys/class/net", ifname, "carrier"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("interface %s: %w in %s", ifname, ErrNoInterface, root)
	}
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(b)) == "1", nil
}

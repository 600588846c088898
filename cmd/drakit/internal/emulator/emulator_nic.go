package emulator

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/emulator/fault"
	"drakit.dev/drakit/emulator/sriov"
	"drakit.dev/drakit/internal/nichw"
)

// checkRoot fails, naming --root, unless root is a rendered emulator root.
func checkRoot(root string) error {
	if root == "" {
		return errors.New("--root: required: the emulator root ('drakit emulator render --root')")
	}
	if _, err := os.Stat(filepath.Join(root, "sys/bus/pci/devices")); err != nil {
		return fmt.Errorf("--root %s: not a rendered emulator root (no sys/bus/pci/devices: %w); render it with 'drakit emulator render'",
			root, errors.Unwrap(err))
	}
	return nil
}

// newEmulatorSRIOVCommand is "drakit emulator sriov": list the SR-IOV PFs,
// or set one PF's VF count (sriov.SetNumVFs).
func newEmulatorSRIOVCommand() *cobra.Command {
	var root, pf string
	numVFs := -1
	cmd := &cobra.Command{
		Use:   "sriov --root DIR [--pf ADDRESS --numvfs N]",
		Short: "List the SR-IOV NICs of an emulated node, or set a PF's VF count as a write to its sriov_numvfs",
		Long: `Without --pf, sriov lists the node's SR-IOV physical functions: address,
interface, driver, sriov_totalvfs and the current VF count. With --pf and
--numvfs it sets the PF's VF count with the kernel's rules: at most
sriov_totalvfs (else ERANGE), and from a non-zero count only to 0 (else EBUSY:
write 0 first). 0 removes every VF; the VFs appear with their PCI functions,
netdevs and, on ConnectX NICs, RDMA and verbs devices. Creating needs root
(the /dev/infiniband nodes).`,
		Example: `  drakit emulator sriov --root /tmp/node
  drakit emulator sriov --root /tmp/node --pf 0000:0c:00.0 --numvfs 4
  drakit emulator sriov --root /tmp/node --pf 0000:0c:00.0 --numvfs 0`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkRoot(root); err != nil {
				return err
			}
			numSet := c.Flags().Changed("numvfs")
			switch {
			case pf == "" && !numSet:
				pfs, err := sriov.PFs(root)
				if err != nil {
					return err
				}
				return writePFs(c.OutOrStdout(), pfs)
			case pf == "":
				return errors.New("--pf: required with --numvfs: the PF's PCI address, e.g. 0000:0c:00.0 (list them with 'drakit emulator sriov --root " + root + "')")
			case !numSet:
				return errors.New("--numvfs: required with --pf: the number of VFs, 0 to remove them")
			case numVFs < 0:
				return fmt.Errorf("--numvfs %d: must be 0 or more", numVFs)
			}
			if _, err := nichw.ParseAddress(pf); err != nil {
				return fmt.Errorf("--pf: %w", err)
			}
			if err := sriov.SetNumVFs(root, pf, numVFs); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "PF %s: %d VFs\n", pf, numVFs)
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "emulator root directory, rendered by 'drakit emulator render'")
	cmd.Flags().StringVar(&pf, "pf", "", "PCI address of the physical function, e.g. 0000:0c:00.0")
	cmd.Flags().IntVar(&numVFs, "numvfs", numVFs, "number of VFs to enable (0 removes them)")
	return cmd
}

func writePFs(w io.Writer, pfs []*sriov.PF) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PF\tINTERFACE\tDRIVER\tTOTALVFS\tNUMVFS\tLINK")
	for _, pf := range pfs {
		link := "down"
		if pf.Up {
			link = "up"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", pf.Address, pf.NetDev, pf.Driver, pf.TotalVFs, pf.NumVFs, link)
	}
	return tw.Flush()
}

// newEmulatorLinkCommand is "drakit emulator link": fault.SetLink.
func newEmulatorLinkCommand() *cobra.Command {
	var root, iface, state string
	cmd := &cobra.Command{
		Use:   "link --root DIR --interface NAME --state up|down",
		Short: "Bring an emulated NIC's (PF's or VF's) link down or up: operstate, carrier, speed, RDMA port state",
		Long: `link injects a link fault: down is a lost carrier (operstate down,
carrier 0, speed -1, RDMA port DOWN) with the interface still configured up;
up restores the link at the NIC's nominal speed. Interfaces are named as in
/sys/class/net ('drakit emulator sriov --root DIR' lists the PFs').`,
		Example: `  drakit emulator link --root /tmp/node --interface enp12s0np0 --state down
  drakit emulator link --root /tmp/node --interface enp12s0np0 --state up`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkRoot(root); err != nil {
				return err
			}
			if iface == "" {
				return errors.New("--interface: required: a name from ROOT/sys/class/net, e.g. enp12s0np0")
			}
			if state != "up" && state != "down" {
				return fmt.Errorf("--state %q: must be up or down", state)
			}
			err := fault.SetLink(root, iface, state == "up")
			if errors.Is(err, fault.ErrNoInterface) || errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("--interface: %w", err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: link %s\n", iface, state)
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "emulator root directory, rendered by 'drakit emulator render'")
	cmd.Flags().StringVar(&iface, "interface", "", "network interface (PF or VF), as in ROOT/sys/class/net")
	cmd.Flags().StringVar(&state, "state", "", "up or down")
	return cmd
}

// newEmulatorVFRemoveCommand is "drakit emulator vf-remove": sriov.RemoveVF.
func newEmulatorVFRemoveCommand() *cobra.Command {
	var root, vf string
	cmd := &cobra.Command{
		Use:   "vf-remove --root DIR --vf ADDRESS",
		Short: "Make one emulated VF vanish, as 'echo 1 > /sys/bus/pci/devices/<vf>/remove' does",
		Long: `vf-remove injects a VF gone: the VF's PCI function, netdev, RDMA and verbs
devices disappear; its PF's virtfn link stays (dangling) and so does the PF's
VF count, as the kernel keeps them until SR-IOV is disabled. Writing 0 to the
PF's sriov_numvfs (or 'drakit emulator sriov --numvfs 0') clears the PF and
the next count brings the VF back.`,
		Example: `  drakit emulator vf-remove --root /tmp/node --vf 0000:0c:00.2`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkRoot(root); err != nil {
				return err
			}
			if vf == "" {
				return errors.New("--vf: required: the VF's PCI address, e.g. 0000:0c:00.2 (a PF's virtfn<i> link names it)")
			}
			err := sriov.RemoveVF(root, vf)
			if errors.Is(err, sriov.ErrNoVF) {
				return fmt.Errorf("--vf: %w", err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: removed\n", vf)
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "emulator root directory, rendered by 'drakit emulator render'")
	cmd.Flags().StringVar(&vf, "vf", "", "the VF's PCI address")
	return cmd
}

package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/emulator/fault"
	"drakit.dev/drakit/emulator/nvmlstate"
)

// faultConfig holds the flags of the "drakit emulator fault" subcommands,
// one field per flag.
type faultConfig struct {
	Root        string // --root
	Device      string // --device: GPU-<uuid>, MIG-<uuid>, PCI bus id or minor
	Code        uint64 // xid --code
	Data        uint64 // xid --data (0: the code)
	Single      uint64 // ecc --single
	Double      uint64 // ecc --double
	Reasons     string // throttle --reasons
	Temperature int    // throttle --temperature (-1: unchanged)
	UUID        string // lose-mig --uuid
	Xid         uint64 // lose-mig --xid
	Output      string // list -o: text or json
	Link        int    // nvlink --link
	LinkState   string // nvlink --state: up or down
}

// defaultFaultConfig is the flags' defaults.
func defaultFaultConfig() faultConfig {
	return faultConfig{Temperature: -1, Xid: 95, Output: "text", Link: -1}
}

// Validate checks the flags op (a subcommand name) takes.
func (c *faultConfig) Validate(op string) error {
	if c.Root == "" {
		return errors.New("--root: required: the emulator root ('drakit emulator render --root'), or $DRAKIT_EMULATOR_ROOT")
	}
	needDevice := op != "list" && op != "lose-mig"
	switch {
	case needDevice && c.Device == "":
		return errors.New("--device: required: the GPU as GPU-<uuid>, PCI bus id or minor (MIG-<uuid> for a MIG device's xid or ecc); 'drakit emulator fault list' shows them")
	case op == "xid" && c.Code == 0:
		return errors.New("--code: required: the Xid, e.g. 48 (double-bit ECC) or 79 (fallen off the bus)")
	case op == "ecc" && c.Single == 0 && c.Double == 0:
		return errors.New("--single or --double: at least one error count must be positive")
	case op == "throttle" && c.Reasons == "":
		return errors.New("--reasons: required: the clocks event reasons, or none to clear them")
	case op == "throttle" && (c.Temperature < -1 || c.Temperature > nvmlstate.MaxTemperature):
		return fmt.Errorf("--temperature %d: must be 0..%d °C", c.Temperature, nvmlstate.MaxTemperature)
	case op == "lose-mig" && !strings.HasPrefix(c.UUID, "MIG-"):
		return fmt.Errorf("--uuid %q: required: the MIG device's MIG-<uuid>", c.UUID)
	case op == "lose-mig" && c.Xid == 0:
		return errors.New("--xid: must be a positive Xid")
	case op == "nvlink" && (c.Link < 0 || c.Link >= nvmlstate.MaxNVLinks):
		return fmt.Errorf("--link %d: required: the link, 0..%d", c.Link, nvmlstate.MaxNVLinks-1)
	case op == "nvlink" && c.LinkState != "up" && c.LinkState != "down":
		return fmt.Errorf("--state %q: must be up or down", c.LinkState)
	case op == "list" && c.Output != "text" && c.Output != "json":
		return fmt.Errorf("-o %q: must be text or json", c.Output)
	}
	if op == "throttle" {
		if _, err := fault.ParseClocksEventReasons(c.Reasons); err != nil {
			return fmt.Errorf("--reasons: %w", err)
		}
	}
	return nil
}

// newEmulatorFaultCommand is "drakit emulator fault": GPU hardware faults
// (package emulator/fault) seen through the emulator's NVML.
func newEmulatorFaultCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fault",
		Short: "Inject GPU hardware faults (Xid, ECC, throttling, a GPU or MIG device lost, an NVLink down) into an emulated node, reset them, list them",
		Long: `fault changes the emulated GPUs' health as the kernel driver would report
it through NVML: every change is an atomic rewrite of the node's NVML state
(run/drakit-emulator/nvml.state, under its lock), seen at once by every NVML
client of the node, and events wake clients waiting in nvmlEventSetWait.
Devices are named by GPU-<uuid>, PCI bus id (00000000:1B:00.0 or
0000:1b:00.0) or minor, or MIG-<uuid> for a MIG device where a command says
so. --root defaults to $DRAKIT_EMULATOR_ROOT, which drakit conformance sets
for the fault command of a driver declaration (deviceKinds[].faultCommand):
'xid --device {identity} --code {fault}' injects, 'reset --device {identity}'
ends the faults. The Xid table: docs/emulator.md, "Injecting hardware
faults".`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(faultXidCommand(), faultECCCommand(), faultThrottleCommand(), faultLoseCommand(),
		faultLoseMIGCommand(), faultResetCommand(), faultListCommand(), faultNVLinkCommand())
	return cmd
}

// faultCommand builds one subcommand: its flags bind to a fresh
// faultConfig, validated before run.
func faultCommand(use, short, example string, flags func(*cobra.Command, *faultConfig),
	run func(c *cobra.Command, cfg *faultConfig) error) *cobra.Command {
	cfg := defaultFaultConfig()
	op := strings.Fields(use)[0]
	cmd := &cobra.Command{
		Use: use, Short: short, Example: example, Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cfg.Validate(op); err != nil {
				return err
			}
			return run(c, &cfg)
		},
	}
	// The default lets a conformance declaration's faultCommand name no
	// root: the kit sets $DRAKIT_EMULATOR_ROOT to the node's.
	cmd.Flags().StringVar(&cfg.Root, "root", os.Getenv("DRAKIT_EMULATOR_ROOT"), "emulator root directory, rendered by 'drakit emulator render' ($DRAKIT_EMULATOR_ROOT)")
	if op != "list" && op != "lose-mig" {
		cmd.Flags().StringVar(&cfg.Device, "device", "", "the GPU: GPU-<uuid>, PCI bus id or minor")
	}
	if flags != nil {
		flags(cmd, &cfg)
	}
	return cmd
}

func faultXidCommand() *cobra.Command {
	return faultCommand("xid --root DIR --device DEV --code N [--data N]",
		"Log an Xid event and apply its device effect (48 double-bit ECC, 79 fallen off the bus, ...)",
		`  drakit emulator fault xid --root /tmp/node --device 0 --code 48
  drakit emulator fault xid --root /tmp/node --device MIG-5c1d... --code 94`,
		func(c *cobra.Command, cfg *faultConfig) {
			c.Flags().Uint64Var(&cfg.Code, "code", 0, "the Xid")
			c.Flags().Uint64Var(&cfg.Data, "data", 0, "the event's eventData (default: the Xid)")
		},
		func(c *cobra.Command, cfg *faultConfig) error {
			res, err := fault.InjectXid(cfg.Root, cfg.Device, fault.XidRequest{Code: cfg.Code, Data: cfg.Data})
			if err != nil {
				return err
			}
			what := fmt.Sprintf("Xid %d (%s, %s fault)", cfg.Code, res.Xid.Name, res.Xid.Kind)
			if !res.Known {
				what = fmt.Sprintf("Xid %d", cfg.Code)
				fmt.Fprintf(c.ErrOrStderr(), "warning: Xid %d is not in the catalogue (internal/nvidiahw): logged as an event only\n", cfg.Code)
			}
			effect := fault.DescribeEffect(res.Effect)
			if effect == "" {
				effect = "no device effect"
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: %s: event %d; %s\n", cfg.Device, what, res.Event.Seq, effect)
			return nil
		})
}

func faultECCCommand() *cobra.Command {
	return faultCommand("ecc --root DIR --device DEV [--single N] [--double N]",
		"Add single-bit and double-bit ECC errors (volatile and aggregate counts, an ECC event each)",
		`  drakit emulator fault ecc --root /tmp/node --device GPU-5d8b... --single 3 --double 1`,
		func(c *cobra.Command, cfg *faultConfig) {
			c.Flags().Uint64Var(&cfg.Single, "single", 0, "single-bit (corrected) errors to add")
			c.Flags().Uint64Var(&cfg.Double, "double", 0, "double-bit (uncorrected) errors to add")
		},
		func(c *cobra.Command, cfg *faultConfig) error {
			if err := fault.ECC(cfg.Root, cfg.Device, cfg.Single, cfg.Double); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: +%d single-bit, +%d double-bit ECC errors\n", cfg.Device, cfg.Single, cfg.Double)
			return nil
		})
}

func faultThrottleCommand() *cobra.Command {
	return faultCommand("throttle --root DIR --device DEV --reasons LIST [--temperature C]",
		"Set a GPU's clocks event (throttle) reasons and temperature",
		`  drakit emulator fault throttle --root /tmp/node --device 0 --reasons hw-slowdown,sw-thermal --temperature 92
  drakit emulator fault throttle --root /tmp/node --device 0 --reasons none`,
		func(c *cobra.Command, cfg *faultConfig) {
			var names []string
			for _, r := range nvmlstate.ClocksEventReasons {
				names = append(names, r.Name)
			}
			c.Flags().StringVar(&cfg.Reasons, "reasons", "", "comma-separated reasons, replacing the GPU's (none: clear): "+strings.Join(names, ", "))
			c.Flags().IntVar(&cfg.Temperature, "temperature", -1, "GPU temperature in °C (default: unchanged)")
		},
		func(c *cobra.Command, cfg *faultConfig) error {
			reasons, _ := fault.ParseClocksEventReasons(cfg.Reasons) // Validate parsed them
			t := fault.Throttle{Reasons: reasons}
			if cfg.Temperature >= 0 {
				t.Temperature = &cfg.Temperature
			}
			if err := fault.SetThrottle(cfg.Root, cfg.Device, t); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: clocks event reasons %q\n", cfg.Device, nvmlstate.ClocksEventReasonNames(reasons))
			return nil
		})
}

func faultLoseCommand() *cobra.Command {
	return faultCommand("lose --root DIR --device DEV",
		"Make a GPU fall off the bus (Xid 79; its device node goes; NVML answers GPU_IS_LOST)",
		`  drakit emulator fault lose --root /tmp/node --device 00000000:1B:00.0`, nil,
		func(c *cobra.Command, cfg *faultConfig) error {
			if err := fault.Lose(cfg.Root, cfg.Device); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: fell off the bus\n", cfg.Device)
			return nil
		})
}

func faultLoseMIGCommand() *cobra.Command {
	return faultCommand("lose-mig --root DIR --uuid MIG-UUID [--xid N]",
		"Make a MIG device vanish (an Xid with its GI and CI ids, then its compute instance goes as a destroy would)",
		`  drakit emulator fault lose-mig --root /tmp/node --uuid MIG-5c1d...`,
		func(c *cobra.Command, cfg *faultConfig) {
			c.Flags().StringVar(&cfg.UUID, "uuid", "", "the MIG device's MIG-<uuid>")
			c.Flags().Uint64Var(&cfg.Xid, "xid", cfg.Xid, "the Xid logged before it vanishes")
		},
		func(c *cobra.Command, cfg *faultConfig) error {
			if err := fault.LoseMIG(cfg.Root, cfg.UUID, cfg.Xid); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: gone (Xid %d)\n", cfg.UUID, cfg.Xid)
			return nil
		})
}

func faultResetCommand() *cobra.Command {
	return faultCommand("reset --root DIR --device DEV",
		"Reset a GPU as nvidia-smi -r does: volatile counts 0, pending retirements applied, recovery none, a lost GPU back",
		`  drakit emulator fault reset --root /tmp/node --device 0`, nil,
		func(c *cobra.Command, cfg *faultConfig) error {
			if err := fault.Reset(cfg.Root, cfg.Device); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: reset\n", cfg.Device)
			return nil
		})
}

func faultListCommand() *cobra.Command {
	return faultCommand("list --root DIR [-o text|json]",
		"Print every GPU's fault state and the logged events",
		`  drakit emulator fault list --root /tmp/node
  drakit emulator fault list --root /tmp/node -o json`,
		func(c *cobra.Command, cfg *faultConfig) {
			c.Flags().StringVarP(&cfg.Output, "output", "o", cfg.Output, "text or json")
		},
		func(c *cobra.Command, cfg *faultConfig) error {
			st, err := fault.List(cfg.Root)
			if err != nil {
				return err
			}
			if cfg.Output == "json" {
				enc := json.NewEncoder(c.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			return writeFaultStatus(c.OutOrStdout(), st)
		})
}

func writeFaultStatus(w io.Writer, st *fault.Status) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tMINOR\tBUS ID\tLOST\tRECOVERY\tSBE VOL/AGG\tDBE VOL/AGG\tRETIRED SBE/DBE/PENDING\tREMAPPED COR/UNC/PENDING/FAILED\tTHROTTLE\tTEMP")
	yes := func(b bool) string { return map[bool]string{true: "yes", false: "no"}[b] }
	for _, g := range st.GPUs {
		throttle := g.ClocksEventReasons
		if throttle == "" {
			throttle = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d/%d\t%d/%d\t%d/%d/%s\t%d/%d/%s/%s\t%s\t%d\n", g.UUID, g.Minor, g.BusID, yes(g.Lost),
			g.RecoveryAction, g.SBEVolatile, g.SBEAggregate, g.DBEVolatile, g.DBEAggregate, g.RetiredSBE, g.RetiredDBE,
			yes(g.RetiredPending), g.RemappedCor, g.RemappedUnc, yes(g.RemapPending), yes(g.RemapFailure), throttle, g.Temperature)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.Events) == 0 {
		_, err := fmt.Fprintln(w, "\nNo events.")
		return err
	}
	fmt.Fprintln(w, "\nEvents, oldest first:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tTYPE\tGPU\tGI\tCI\tDATA\tWHAT")
	id := func(p *int) string {
		if p == nil {
			return "-"
		}
		return strconv.Itoa(*p)
	}
	for _, e := range st.Events {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", e.Seq, e.Time, e.Type, e.GPU, id(e.GI), id(e.CI), e.Data, e.What)
	}
	return tw.Flush()
}

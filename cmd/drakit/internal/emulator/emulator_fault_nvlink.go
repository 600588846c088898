package emulator

import (
	"fmt"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/emulator/fault"
)

// faultNVLinkCommand is "drakit emulator fault nvlink": fault.SetNVLink.
func faultNVLinkCommand() *cobra.Command {
	return faultCommand("nvlink --root DIR --device DEV --link N --state up|down",
		"Bring one NVLink of a GPU down or up (a GPU of a multi-node fabric reports degraded bandwidth while one is down)",
		`  drakit emulator fault nvlink --root /tmp/node --device GPU-5d8b... --link 3 --state down
  drakit emulator fault nvlink --root /tmp/node --device 0000:18:00.0 --link 3 --state up`,
		func(c *cobra.Command, cfg *faultConfig) {
			c.Flags().IntVar(&cfg.Link, "link", -1, "the link number, 0..17")
			c.Flags().StringVar(&cfg.LinkState, "state", "", "up or down")
		},
		func(c *cobra.Command, cfg *faultConfig) error {
			if err := fault.SetNVLink(cfg.Root, cfg.Device, cfg.Link, cfg.LinkState == "up"); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: NVLink %d %s\n", cfg.Device, cfg.Link, cfg.LinkState)
			return nil
		})
}

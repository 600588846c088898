// Package version is drakit version.
package version

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// kubernetesVersion is the Kubernetes release drakit targets.
const kubernetesVersion = "v1.37.2"

// versionInfo is what drakit version prints.
type versionInfo struct {
	// Drakit is the stamped version, else the main module's version
	// ("(devel)" for a build in the repository).
	Drakit string `json:"drakitVersion"`
	// Revision and Modified are the VCS stamp of the build, when Go
	// recorded one.
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"goVersion"`
	Platform string `json:"platform"`
	// Kubernetes is the release the kit targets.
	Kubernetes string `json:"kubernetesVersion"`
}

// currentVersion reads the build info; stamped wins over the module's
// version.
func currentVersion(stamped string) versionInfo {
	v := versionInfo{Drakit: stamped, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Kubernetes: kubernetesVersion}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Drakit == "" {
			v.Drakit = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Drakit == "" {
		v.Drakit = "unknown"
	}
	return v
}

// print writes v as output: "" (lines), json or yaml.
func (v versionInfo) print(w io.Writer, output string) error {
	var data []byte
	var err error
	switch output {
	case "":
		_, err = fmt.Fprintf(w, "drakit %s\nGo %s %s\nKubernetes %s\n", v.Drakit, v.Go, v.Platform, v.Kubernetes)
		if err != nil {
			return fmt.Errorf("write version: %w", err)
		}
		return nil
	case "json":
		data, err = json.MarshalIndent(v, "", "  ")
		data = append(data, '\n')
	case "yaml":
		data, err = yaml.Marshal(v)
	default:
		return fmt.Errorf("--output %q: want json or yaml (or nothing)", output)
	}
	if err != nil {
		return fmt.Errorf("encode version: %w", err)
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("write version: %w", err)
	}
	return nil
}

// NewCommand returns drakit version; stamped is the version the build
// stamped (main.gitVersion; empty: the module's).
func NewCommand(stamped string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print drakit's version, the Go version it was built with and the Kubernetes version it targets",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return currentVersion(stamped).print(c.OutOrStdout(), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: lines)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp)) // bound above
	return cmd
}

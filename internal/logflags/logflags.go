package logflags

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // the json --logging-format
	"k8s.io/klog/v2"
)

// Formats are the values --logging-format accepts.
var Formats = []string{logsapi.DefaultLogFormat, logsapi.JSONLogFormat}

// Logging is one command's logging configuration.
type Logging struct {
	cfg *logsapi.LoggingConfiguration
}

// New returns the default configuration (text, verbosity 0).
func New() *Logging { return &Logging{cfg: logsapi.NewLoggingConfiguration()} }

// AddFlags adds the logging flags to fs.
func (l *Logging) AddFlags(fs *pflag.FlagSet) { logsapi.AddFlags(l.cfg, fs) }

// Config is the configuration the flags set.
func (l *Logging) Config() *logsapi.LoggingConfiguration { return l.cfg }

// Apply validates the configuration and applies it to klog.
func (l *Logging) Apply() error {
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	if err := logsapi.ValidateAndApply(l.cfg, nil); err != nil {
		return fmt.Errorf("apply logging flags: %w", err)
	}
	return nil
}

// Context returns ctx with klog's logger named name, for klog.FromContext.
func Context(ctx context.Context, name string) context.Context {
	return klog.NewContext(ctx, klog.Background().WithName(name))
}

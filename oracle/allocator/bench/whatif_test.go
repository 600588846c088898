package bench

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"default with a file", func(c *Config) { c.File = "s.yaml" }, ""},
		{"no file", func(c *Config) {}, "file: required"},
		{"bad mode", func(c *Config) { c.File, c.Mode = "s.yaml", "best-fit" }, `mode: parse mode "best-fit"`},
		{"zero timeout", func(c *Config) { c.File, c.Timeout = "s.yaml", 0 }, "timeout: must be positive"},
		{"bad output", func(c *Config) { c.File, c.Output = "s.yaml", "json" }, `output: must be text or yaml, got "json"`},
		{"packing, yaml", func(c *Config) { c.File, c.Mode, c.Output, c.Timeout = "s.yaml", "packing", "yaml", time.Second }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.modify(&cfg)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

package kit

import (
	"errors"
	"strings"
	"testing"
	"time"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/report"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func() Config {
		c := referenceDriverConfig()
		c.Kubeconfig = "/tmp/kubeconfig"
		return c
	}
	tests := map[string]struct {
		mutate func(*Config)
		want   []string // substrings of the error; none means valid
	}{
		"reference driver": {mutate: func(*Config) {}},
		"no declaration":   {mutate: func(c *Config) { c.Declaration = nil }, want: []string{"Declaration: required"}},
		"an invalid declaration": {
			mutate: func(c *Config) { c.Declaration.DeviceKinds[0].Identity.Attribute = "gpu-uuid" },
			want:   []string{"deviceKinds[0].identity.attribute", "C identifier"},
		},
		"missing kubeconfig":     {mutate: func(c *Config) { c.Kubeconfig = "" }, want: []string{"Kubeconfig: required"}},
		"relative probe binary":  {mutate: func(c *Config) { c.ProbeBinary = "drakit-probe" }, want: []string{"ProbeBinary", "absolute"}},
		"no probe image":         {mutate: func(c *Config) { c.ProbeImage = "" }, want: []string{"ProbeImage: required"}},
		"bad pull policy":        {mutate: func(c *Config) { c.ImagePullPolicy = "Sometimes" }, want: []string{`ImagePullPolicy: "Sometimes"`}},
		"port out of range":      {mutate: func(c *Config) { c.APIServerPort = 70000 }, want: []string{"APIServerPort: 70000"}},
		"empty tag term":         {mutate: func(c *Config) { c.Tags = "@kep-4381 &&" }, want: []string{"Tags", "empty term"}},
		"empty alternative":      {mutate: func(c *Config) { c.Tags = "@a,,@b" }, want: []string{"Tags", "empty term"}},
		"tag with space":         {mutate: func(c *Config) { c.Tags = "@kep 4381" }, want: []string{"Tags", "is not a tag"}},
		"a profile":              {mutate: func(c *Config) { c.Profile = "partitionable" }},
		"unknown profile":        {mutate: func(c *Config) { c.Profile = "gold" }, want: []string{`Profile: unknown profile "gold" (known: ` + strings.Join(report.ProfileNames(), ", ") + `)`}},
		"comma in artifacts dir": {mutate: func(c *Config) { c.ArtifactsDir = "a,b" }, want: []string{"ArtifactsDir", "comma"}},
		"no artifacts dir":       {mutate: func(c *Config) { c.ArtifactsDir = "" }, want: []string{"ArtifactsDir: required"}},
		"zero timeouts": {
			mutate: func(c *Config) { c.Timeouts.PodStart, c.Timeouts.Cleanup = 0, -time.Second },
			want:   []string{"Timeouts.PodStart: 0s must be positive", "Timeouts.Cleanup: -1s must be positive"},
		},
		"interposer on a unix socket": {mutate: func(c *Config) { c.Interpose = "/run/drakit/interpose.sock" }},
		"interposer on loopback":      {mutate: func(c *Config) { c.Interpose = "127.0.0.1:7070" }},
		"interposer off loopback":     {mutate: func(c *Config) { c.Interpose = "0.0.0.0:7070" }, want: []string{"Interpose", "loopback only"}},
		"no concurrency":              {mutate: func(c *Config) { c.Concurrency = 0 }, want: []string{"Concurrency: 0"}},
		"negative seed":               {mutate: func(c *Config) { c.Randomize = -2 }, want: []string{"Randomize: -2"}},
		"unknown format":              {mutate: func(c *Config) { c.Format = "junit" }, want: []string{`Format: "junit"`}},
		"no output":                   {mutate: func(c *Config) { c.Output = nil }, want: []string{"Output: required"}},
		"several problems":            {mutate: func(c *Config) { c.Kubeconfig, c.Concurrency = "", 0 }, want: []string{"Kubeconfig: required", "Concurrency: 0"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := valid()
			tc.mutate(&c)
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: no error, want %q", tc.want)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Validate: %v does not wrap ErrInvalidConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestDeviceClass(t *testing.T) {
	t.Parallel()
	c := DriverSettings{}
	c.DriverName = "gpu.example.com"
	if got := c.DeviceClass(); got != "gpu.example.com" {
		t.Errorf("deviceClass() = %q, want the driver name", got)
	}
	c.DeviceClassName = "big-gpus"
	if got := c.DeviceClass(); got != "big-gpus" {
		t.Errorf("deviceClass() = %q, want big-gpus", got)
	}
}

func TestAPIServerAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host     string
		port     int
		server   string
		wantHost string
		wantPort int
		wantErr  string
	}{
		{server: "https://127.0.0.1:16443", wantHost: "127.0.0.1", wantPort: 16443},
		{server: "https://127.0.0.1", wantHost: "127.0.0.1", wantPort: 443},
		{server: "http://127.0.0.1", wantHost: "127.0.0.1", wantPort: 80},
		{server: "https://[::1]:6443", wantHost: "::1", wantPort: 6443},
		{host: "127.0.0.2", server: "https://127.0.0.1:16443", wantHost: "127.0.0.2", wantPort: 16443},
		{port: 6443, server: "https://127.0.0.1:16443", wantHost: "127.0.0.1", wantPort: 6443},
		{host: "127.0.0.1", port: 6443, server: "", wantHost: "127.0.0.1", wantPort: 6443},
		{server: "127.0.0.1:6443", wantErr: "not a URL with a host"},
		{server: "", wantErr: "not a URL with a host"},
	}
	for _, tc := range tests {
		host, port, err := apiServerAddress(Config{APIServerHost: tc.host, APIServerPort: tc.port}, tc.server)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("apiServerAddress(%q, %d, %q): got %v, want error %q", tc.host, tc.port, tc.server, err, tc.wantErr)
			}
			continue
		}
		if err != nil || host != tc.wantHost || port != tc.wantPort {
			t.Errorf("apiServerAddress(%q, %d, %q) = %q, %d, %v; want %q, %d", tc.host, tc.port, tc.server, host, port, err, tc.wantHost, tc.wantPort)
		}
	}
}

// referenceDriverConfig is DefaultConfig with the reference driver's
// declaration applied (docs/examples/reference-driver.yaml), as make
// conformance runs the kit.
func referenceDriverConfig() Config {
	d, err := declaration.Load("../../docs/examples/reference-driver.yaml")
	if err != nil {
		panic(err)
	}
	c := DefaultConfig()
	c.Declaration = d
	return c
}

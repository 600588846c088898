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
		"kit defaults only": {
			mutate: func(c *Config) { *c = DefaultConfig(); c.Kubeconfig = "k" },
			want:   []string{"DriverName: required", "UUIDAttribute: required"},
		},
		"flags only": {mutate: func(c *Config) {
			*c = DefaultConfig()
			c.Kubeconfig, c.DriverName, c.UUIDAttribute = "k", "gpu.example.com", "uuid"
		}},
		"qualified uuid attribute":    {mutate: func(c *Config) { c.UUIDAttribute = "gpu.example.com/uuid" }},
		"tag filter with and/or/not":  {mutate: func(c *Config) { c.Tags = "@kep-4381 && ~@slow, @kep-4816" }},
		"explicit API server address": {mutate: func(c *Config) { c.APIServerHost, c.APIServerPort = "127.0.0.1", 16443 }},
		"no env prefix":               {mutate: func(c *Config) { c.DeviceEnvPrefix = "" }},
		"no driver pod selector":      {mutate: func(c *Config) { c.DriverPodSelector = "" }},
		"no partition class":          {mutate: func(c *Config) { c.PartitionClassName = "" }},
		"bad partition class":         {mutate: func(c *Config) { c.PartitionClassName = "MIG" }, want: []string{"PartitionClassName"}},
		"empty profile attribute":     {mutate: func(c *Config) { c.ProfileAttribute = "" }, want: []string{"ProfileAttribute: required with a PartitionClassName"}},
		"no partitions, no names": {mutate: func(c *Config) {
			c.PartitionClassName, c.ProfileAttribute, c.ParentUUIDAttribute, c.MemoryCapacity = "", "", "", ""
		}},
		"unknown capability": {mutate: func(c *Config) { c.Capabilities = []string{"teleport"} }, want: []string{`Capabilities: "teleport" is not a capability`}},
		"capability without what it needs": {
			mutate: func(c *Config) { c.Capabilities = []string{"deviceHealthMessages"} },
			want:   []string{"deviceHealthMessages (KEP-4680) requires deviceHealth"},
		},
		"binding conditions without their types": {
			mutate: func(c *Config) { c.Capabilities = []string{"bindingConditions"} },
			want:   []string{"BindingConditions: the capability bindingConditions (KEP-5007) needs the driver's condition types"},
		},
		"binding conditions set by the kit": {mutate: func(c *Config) {
			c.Capabilities = []string{"bindingConditions"}
			c.BindingConditions, c.BindingFailureConditions, c.BindingConditionsSetBy = []string{"gpu.example.com/attached"}, []string{"gpu.example.com/attach-failed"}, "kit"
		}},
		"bad parent uuid attribute":  {mutate: func(c *Config) { c.ParentUUIDAttribute = "parent-uuid" }, want: []string{"ParentUUIDAttribute"}},
		"bad memory capacity domain": {mutate: func(c *Config) { c.MemoryCapacity = "A_B/memory" }, want: []string{"MemoryCapacity", "domain part"}},
		"missing kubeconfig":         {mutate: func(c *Config) { c.Kubeconfig = "" }, want: []string{"Kubeconfig: required"}},
		"driver not a DNS subdomain": {mutate: func(c *Config) { c.DriverName = "GPU_Driver" }, want: []string{`DriverName: "GPU_Driver" is not a DNS subdomain`}},
		"driver too long": {
			mutate: func(c *Config) { c.DriverName = strings.Repeat("a", 60) + ".example.com" },
			want:   []string{"is longer than 63 characters"},
		},
		"bad device class":       {mutate: func(c *Config) { c.DeviceClassName = "a b" }, want: []string{"DeviceClassName"}},
		"uuid attribute not C":   {mutate: func(c *Config) { c.UUIDAttribute = "gpu-uuid" }, want: []string{"UUIDAttribute", "C identifier"}},
		"uuid attribute domain":  {mutate: func(c *Config) { c.UUIDAttribute = "Bad_Domain/uuid" }, want: []string{"UUIDAttribute", "domain part"}},
		"env prefix with dash":   {mutate: func(c *Config) { c.DeviceEnvPrefix = "GPU-" }, want: []string{"DeviceEnvPrefix"}},
		"relative probe binary":  {mutate: func(c *Config) { c.ProbeBinary = "drakit-probe" }, want: []string{"ProbeBinary", "absolute"}},
		"no probe image":         {mutate: func(c *Config) { c.ProbeImage = "" }, want: []string{"ProbeImage: required"}},
		"bad pull policy":        {mutate: func(c *Config) { c.ImagePullPolicy = "Sometimes" }, want: []string{`ImagePullPolicy: "Sometimes"`}},
		"port out of range":      {mutate: func(c *Config) { c.APIServerPort = 70000 }, want: []string{"APIServerPort: 70000"}},
		"bad driver namespace":   {mutate: func(c *Config) { c.DriverNamespace = "Kube_System" }, want: []string{"DriverNamespace"}},
		"bad driver selector":    {mutate: func(c *Config) { c.DriverPodSelector = "app in (a" }, want: []string{"DriverPodSelector"}},
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
	c := DefaultConfig()
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
	c.ApplyDeclaration(d, func(string) bool { return false })
	return c
}

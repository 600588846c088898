package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/oracle/allocator"
	"drakit.dev/drakit/oracle/allocator/scenario"
)

// Output formats of WhatIf.
const (
	OutputText = "text"
	OutputYAML = "yaml"
)

// Config is what `drakit allocate -f` does; fields map 1:1 onto its flags.
type Config struct {
	// File is the scenario YAML to allocate.
	File string
	// Mode is the reference allocator's mode: first-fit or packing.
	Mode string
	// OneByOne allocates the claims one after another, each committed
	// before the next (pods arriving in order), instead of in one call.
	OneByOne bool
	// CompareUpstream also runs the upstream allocator and prints both.
	CompareUpstream bool
	// Timeout bounds each Allocate call (the scheduler's per-node filter
	// timeout is 10s); a call that hits it is reported as a timeout.
	Timeout time.Duration
	// Output is text or yaml.
	Output string
}

// DefaultConfig returns first-fit, all claims in one call, reference only,
// a 10s timeout and text output.
func DefaultConfig() Config {
	return Config{Mode: allocator.ModeFirstFit.String(), Timeout: 10 * time.Second, Output: OutputText}
}

// Validate reports invalid fields by name.
func (c Config) Validate() error {
	var errs []error
	if c.File == "" {
		errs = append(errs, errors.New("file: required (-f scenario.yaml)"))
	}
	if _, err := allocator.ParseMode(c.Mode); err != nil {
		errs = append(errs, fmt.Errorf("mode: %w", err))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: must be positive, got %v", c.Timeout))
	}
	if c.Output != OutputText && c.Output != OutputYAML {
		errs = append(errs, fmt.Errorf("output: must be %s or %s, got %q", OutputText, OutputYAML, c.Output))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("validate allocate config: %w", err)
	}
	return nil
}

// Report is the result of WhatIf, one Run per allocator.
type Report struct {
	Scenario    string `json:"scenario,omitempty"`
	Node        string `json:"node"`
	Satisfiable *bool  `json:"satisfiable,omitempty"`
	OneByOne    bool   `json:"oneByOne,omitempty"`
	Runs        []Run  `json:"runs"`
}

// Run is one allocator's answer.
type Run struct {
	// Allocator is "reference (first-fit)", "reference (packing)" or "upstream".
	Allocator string `json:"allocator"`
	// Duration is the wall time of all Allocate calls, allocators included.
	Duration metav1.Duration `json:"duration"`
	// TimedOut is set when an Allocate call hit Config.Timeout.
	TimedOut bool `json:"timedOut,omitempty"`
	// Claims has one entry per claim, in order.
	Claims []ClaimResult `json:"claims"`
}

// ClaimResult is the allocation of one claim, or why there is none.
type ClaimResult struct {
	Claim      string                        `json:"claim"`
	Allocation *resourceapi.AllocationResult `json:"allocation,omitempty"`
	// Why says why the claim (in one-call mode: the claims together) got
	// no allocation.
	Why string `json:"why,omitempty"`
}

// WhatIf loads cfg.File, allocates it with the reference allocator and,
// with CompareUpstream, with upstream, and writes the report to w in
// cfg.Output format. Invalid scenarios and invalid input to the allocators
// are errors; "does not fit" and timeouts are part of the report.
func WhatIf(ctx context.Context, cfg Config, w io.Writer) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s, err := scenario.Load(cfg.File)
	if err != nil {
		return nil, err
	}
	mode, _ := allocator.ParseMode(cfg.Mode) // checked by Validate
	rep := &Report{Scenario: s.Name, Node: s.Node.Name, Satisfiable: s.Satisfiable, OneByOne: cfg.OneByOne}
	type runner struct {
		name string
		run  func(context.Context, *scenario.Scenario) (Outcome, error)
	}
	runners := []runner{{"reference (" + mode.String() + ")", func(ctx context.Context, s *scenario.Scenario) (Outcome, error) {
		return Reference(ctx, allocator.Options{Mode: mode}, s)
	}}}
	if cfg.CompareUpstream {
		runners = append(runners, runner{"upstream", Upstream})
	}
	for _, r := range runners {
		run, err := allocate(ctx, cfg, s, r.name, r.run)
		if err != nil {
			return nil, err
		}
		rep.Runs = append(rep.Runs, run)
	}
	if err := rep.write(w, cfg.Output); err != nil {
		return nil, err
	}
	return rep, nil
}

func allocate(ctx context.Context, cfg Config, s *scenario.Scenario, name string,
	run func(context.Context, *scenario.Scenario) (Outcome, error)) (Run, error) {
	out := Run{Allocator: name}
	groups := [][]int{}
	if cfg.OneByOne {
		for i := range s.Claims {
			groups = append(groups, []int{i})
		}
	} else {
		all := make([]int, len(s.Claims))
		for i := range all {
			all[i] = i
		}
		groups = append(groups, all)
	}
	cur := *s
	state := &cur
	for _, g := range groups {
		step := *state
		step.Claims = nil
		for _, i := range g {
			step.Claims = append(step.Claims, s.Claims[i])
		}
		callCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		start := time.Now()
		o, err := run(callCtx, &step)
		out.Duration.Duration += time.Since(start)
		cancel()
		timedOut := errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
		if err != nil && !timedOut {
			return Run{}, err
		}
		for j, i := range g {
			cr := ClaimResult{Claim: claimName(s.Claims[i])}
			switch {
			case timedOut:
				out.TimedOut = true
				cr.Why = fmt.Sprintf("timed out after %v", cfg.Timeout)
			case o.Results == nil:
				cr.Why = "no allocation on node " + s.Node.Name
				if o.Explanation != "" {
					cr.Why += ": " + o.Explanation
				}
			default:
				cr.Allocation = &o.Results[j]
			}
			out.Claims = append(out.Claims, cr)
		}
		if o.Results != nil && !timedOut {
			next, err := step.Commit(o.Results, nil)
			if err != nil {
				return Run{}, err
			}
			state = next
		}
	}
	return out, nil
}

func claimName(c *resourceapi.ResourceClaim) string {
	if c.Namespace == "" {
		return c.Name
	}
	return c.Namespace + "/" + c.Name
}

func (r *Report) write(w io.Writer, format string) error {
	if format == OutputYAML {
		out, err := yaml.Marshal(r)
		if err != nil {
			return fmt.Errorf("marshal allocation report: %w", err)
		}
		_, err = w.Write(out)
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %q on node %s", r.Scenario, r.Node)
	if r.Satisfiable != nil {
		fmt.Fprintf(&b, " (known answer: satisfiable=%v)", *r.Satisfiable)
	}
	if r.OneByOne {
		b.WriteString(", claims one by one")
	}
	b.WriteString("\n")
	for _, run := range r.Runs {
		fmt.Fprintf(&b, "%s: %s", run.Allocator, run.Duration.Round(time.Microsecond))
		if run.TimedOut {
			b.WriteString(" (TIMEOUT)")
		}
		b.WriteString("\n")
		for _, c := range run.Claims {
			fmt.Fprintf(&b, "  claim %s:", c.Claim)
			if c.Allocation == nil {
				fmt.Fprintf(&b, " %s\n", c.Why)
				continue
			}
			b.WriteString("\n")
			for _, d := range c.Allocation.Devices.Results {
				fmt.Fprintf(&b, "    %s: %s/%s/%s", d.Request, d.Driver, d.Pool, d.Device)
				if d.ShareID != nil {
					fmt.Fprintf(&b, " share %s", *d.ShareID)
				}
				if d.AdminAccess != nil && *d.AdminAccess {
					b.WriteString(" (admin access)")
				}
				b.WriteString("\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

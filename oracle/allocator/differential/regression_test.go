package differential

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/dynamic-resource-allocation/cel"

	"drakit.dev/drakit/oracle/allocator"
	"drakit.dev/drakit/oracle/allocator/scenario"
)

// TestReproducers runs the reproducers the differential run found, with
// their known verdicts (upstream's, computed once without a time budget),
// and bounds the reference allocator's time on them.
func TestReproducers(t *testing.T) {
	for _, tc := range []struct {
		file string
		// kind is the verdict both allocators reach given enough time.
		kind string
		// why is a substring of the reference's explanation: the bound
		// that must decide the instance.
		why string
		// limit is the slowest acceptable reference time (best of 3); the
		// target is 10 ms, the slack absorbs a noisy machine.
		limit time.Duration
	}{
		{
			// Upstream needs about 5 s to say "no fit"; the reference took
			// 0.5 s before distinctAttribute got its own bound: claim-2
			// needs 3 devices with distinct example.com/numa values and
			// only 2 values exist.
			file:  "testdata/seed-104808-reference-timeout.yaml",
			kind:  "no fit",
			why:   "distinctAttribute example.com/numa",
			limit: 50 * time.Millisecond,
		},
		{
			// Upstream needs about 15 s; the reference took 1.5-2 s until
			// claims were checked on their own: claim-2 alone uses up the
			// bw capacity of the shared gpu devices.
			file:  "testdata/seed-55470-reference-timeout.yaml",
			kind:  "no fit",
			why:   "claim default/claim-2 does not fit even on its own",
			limit: 50 * time.Millisecond,
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s, err := scenario.Load(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			best := time.Duration(1<<63 - 1)
			for range 3 {
				c := copyScenario(s)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				start := time.Now()
				a, err := allocator.New(ctx, c.Features.Structured(), c.AllocatedState(), c.ClassLister(), c.ResourceSlices, cel.NewCache(10, c.Features.CEL()))
				if err != nil {
					cancel()
					t.Fatal(err)
				}
				results, why, err := a.AllocateExplained(ctx, c.Node, c.Claims)
				elapsed := time.Since(start)
				cancel()
				o := outcome{results: results, err: err, elapsed: elapsed}
				if got := o.kind(); got != tc.kind {
					t.Fatalf("verdict %s (err %v), want %s", got, err, tc.kind)
				}
				if !strings.Contains(why, tc.why) {
					t.Errorf("explanation %q does not contain %q", why, tc.why)
				}
				best = min(best, elapsed)
			}
			t.Logf("reference: %s, best of 3: %v", tc.kind, best)
			if best > tc.limit {
				t.Errorf("reference took %v (best of 3), want <= %v", best, tc.limit)
			}
		})
	}
}

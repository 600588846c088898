package kit

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/cucumber/godog"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/conformance/report"
)

// Eligibility: a scenario says by tag which feature gates and API versions
// it needs of the cluster (report.ParseNeeds), and the kit skips it before
// its first step, as not eligible on this cluster, when the cluster lacks
// one. The gates are the API server's (the kubernetes_feature_enabled
// metric), which stand for the cluster's: the components of one cluster
// share their gates. What the kit cannot read it does not hold against the
// cluster: the scenario runs, and its own steps find out.

// clusterOffer is what the cluster offers scenarios.
type clusterOffer struct {
	// gates are the enabled feature gates; apis the served API versions
	// (group/version). Each is nil when the kit could not read it.
	gates, apis []string
}

// eligibility reads the cluster's offer once per run.
type eligibility struct {
	once  sync.Once
	offer clusterOffer
}

// notEligible is why a cluster with this offer cannot run a scenario with
// these needs: report.NotEligiblePrefix and what it lacks; "" when it can,
// or when the kit cannot tell.
func (o clusterOffer) notEligible(n report.Needs) string {
	var lacks report.Needs
	if o.gates != nil {
		for _, g := range n.Gates {
			if !slices.Contains(o.gates, g) {
				lacks.Gates = append(lacks.Gates, g)
			}
		}
	}
	if o.apis != nil {
		for _, a := range n.APIs {
			if !slices.Contains(o.apis, a) {
				lacks.APIs = append(lacks.APIs, a)
			}
		}
	}
	if len(lacks.Gates)+len(lacks.APIs) == 0 {
		return ""
	}
	return report.NotEligiblePrefix + "needs " + lacks.String()
}

// clusterOffer reads the cluster's feature gates and served API versions,
// once per run.
func (s *Suite) clusterOffer(ctx context.Context) clusterOffer {
	s.eligibility.once.Do(func() {
		logger := klog.FromContext(ctx)
		if _, err := s.allocatorFeatures(ctx); err != nil {
			logger.Info("The kit cannot tell which scenarios the cluster's feature gates rule out: it runs them all", "err", err)
		} else {
			s.eligibility.offer.gates = append([]string{}, s.gates...)
		}
		groups, err := s.Kube.Discovery().ServerGroups()
		switch {
		case err != nil:
			logger.Info("The kit cannot tell which scenarios the cluster's API versions rule out: it runs them all", "err", err)
		case len(groups.Groups) == 0:
			// An API server serves at least the core group: an empty
			// answer is a client that cannot discover (a fake).
			logger.Info("The kit cannot tell which scenarios the cluster's API versions rule out: discovery lists no API group")
		default:
			apis := []string{}
			for _, g := range groups.Groups {
				for _, v := range g.Versions {
					apis = append(apis, v.GroupVersion)
				}
			}
			s.eligibility.offer.apis = apis
		}
	})
	return s.eligibility.offer
}

// checkEligibility is a Before hook: it skips a scenario the cluster is not
// eligible for, before the scenario's first step and before the scenario
// gets a namespace (beforeScenario). A malformed eligibility tag fails the
// scenario.
func (w *World) checkEligibility(ctx context.Context, sc *godog.Scenario) (context.Context, error) {
	tags := make([]string, 0, len(sc.Tags))
	for _, t := range sc.Tags {
		tags = append(tags, t.Name)
	}
	needs, err := report.ParseNeeds(tags)
	if err != nil {
		return ctx, fmt.Errorf("scenario %q: %w", sc.Name, err)
	}
	if len(needs.Gates)+len(needs.APIs) == 0 {
		return ctx, nil
	}
	if reason := w.clusterOffer(ctx).notEligible(needs); reason != "" {
		w.notEligible = reason
		return ctx, fmt.Errorf("%w: %s", godog.ErrSkip, reason)
	}
	return ctx, nil
}

// noteNotEligible is an After step hook: it attaches the reason the
// scenario is not eligible to its first step, which godog reports skipped
// without what the Before hook attached.
func (w *World) noteNotEligible(ctx context.Context, _ *godog.Step, status godog.StepResultStatus, _ error) (context.Context, error) {
	if w.notEligible == "" || w.notEligibleNoted || status != godog.StepSkipped {
		return ctx, nil
	}
	w.notEligibleNoted = true
	return godog.Attach(ctx, godog.Attachment{FileName: skipReasonAttachment, MediaType: "text/plain", Body: []byte(w.notEligible)}), nil
}

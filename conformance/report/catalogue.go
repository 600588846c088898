package report

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// WriteCatalogue renders every scenario of the features in fsys as
// Markdown, grouped by KEP tag: a table with each KEP's topic (its
// kep-<number>-<topic> directory), Core / Extended counts and driver /
// cluster check counts (ClusterCheckTag), then per KEP a collapsed list of
// its scenarios with their level, what they check, what they need of the
// cluster (ParseNeeds) and their file. README's "What a run checks" holds
// this text; a test keeps the two equal.
func WriteCatalogue(w io.Writer, fsys fs.FS) error {
	all, err := allScenarios(fsys)
	if err != nil {
		return err
	}
	type kep struct {
		tag     string
		topic   string
		core    int
		ext     int
		cluster int
		scenes  []ScenarioResult
		// dirs counts the KEP's scenarios per directory: its topic is
		// that of its own kep-<number>-* directory with the most.
		dirs map[string]int
	}
	byTag := map[string]*kep{}
	for _, s := range all {
		for _, t := range kepTagsOf(s.Tags) {
			k := byTag[t]
			if k == nil {
				k = &kep{tag: t, dirs: map[string]int{}}
				byTag[t] = k
			}
			k.dirs[path.Dir(s.URI)]++
			if levelOf(s.Tags) == levelExtended {
				k.ext++
			} else {
				k.core++
			}
			if slices.Contains(s.Tags, ClusterCheckTag) {
				k.cluster++
			}
			k.scenes = append(k.scenes, s)
		}
	}
	keps := make([]*kep, 0, len(byTag))
	for _, k := range byTag {
		best, own := "", false
		for dir, n := range k.dirs {
			isOwn := strings.HasPrefix(dir, strings.TrimPrefix(k.tag, "@")+"-")
			if best == "" || isOwn && !own || isOwn == own && (n > k.dirs[best] || n == k.dirs[best] && dir < best) {
				best, own = dir, isOwn
			}
		}
		k.topic = topicOf(k.tag, best)
		keps = append(keps, k)
	}
	sort.Slice(keps, func(i, j int) bool { return kepNumber(keps[i].tag) < kepNumber(keps[j].tag) })

	cluster := 0
	for _, s := range all {
		if slices.Contains(s.Tags, ClusterCheckTag) {
			cluster++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d scenarios over %d KEPs: %d check the driver, %d the cluster (%s: the API server, the scheduler, a controller or the kubelet, with the kit's own test devices or none of the driver's work to judge; they do not count in the driver's verdict).\n\n",
		len(all), len(keps), len(all)-cluster, cluster, ClusterCheckTag)
	fmt.Fprintln(&b, "| KEP | Topic | Core | Extended | Driver checks | Cluster checks |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|")
	for _, k := range keps {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d |\n", kepTitle(k.tag), k.topic, k.core, k.ext, k.core+k.ext-k.cluster, k.cluster)
	}
	for _, k := range keps {
		fmt.Fprintf(&b, "\n<details><summary>%s %s: %d scenarios</summary>\n\n", kepTitle(k.tag), k.topic, len(k.scenes))
		slices.SortStableFunc(k.scenes, func(a, b ScenarioResult) int {
			if c := strings.Compare(a.URI, b.URI); c != 0 {
				return c
			}
			return a.Line - b.Line
		})
		for _, s := range k.scenes {
			what, err := checkOf(s.Tags)
			if err != nil {
				return fmt.Errorf("%s:%d: %w", s.URI, s.Line, err)
			}
			fmt.Fprintf(&b, "- %s, %s: %s (`%s`)\n", levelOf(s.Tags), what, s.Name, s.URI)
		}
		fmt.Fprintln(&b, "\n</details>")
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// checkOf says what a scenario with these tags checks, and what it needs
// of the cluster: "driver check", "cluster check, needs feature gate
// DRAListTypeAttributes".
func checkOf(tags []string) (string, error) {
	what := "driver check"
	if slices.Contains(tags, ClusterCheckTag) {
		what = "cluster check"
	}
	needs, err := ParseNeeds(tags)
	if err != nil {
		return "", err
	}
	if list := needs.String(); list != "" {
		what += ", needs " + list
	}
	return what, nil
}

// topicOf is the topic of a KEP from the directory of one of its
// scenarios: "structured parameters" of kep-4381-structured-parameters;
// a directory of another name (tpu-torus) is the topic as it stands.
func topicOf(tag, dir string) string {
	dir = path.Base(dir)
	if rest, ok := strings.CutPrefix(dir, strings.TrimPrefix(tag, "@")+"-"); ok {
		dir = rest
	}
	return strings.ReplaceAll(dir, "-", " ")
}

// kepTitle is "KEP-4381" for @kep-4381.
func kepTitle(tag string) string {
	if n, ok := strings.CutPrefix(tag, "@kep-"); ok {
		return "KEP-" + n
	}
	return tag
}

// kepNumber orders KEP tags by number; a tag without one goes last.
func kepNumber(tag string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(tag, "@kep-"))
	if err != nil {
		return 1 << 30
	}
	return n
}

// Package podgroups holds the steps of KEP-5729, workload claims
// (features/kep-5729-workload-claims): PodGroups whose resource claims the
// pods of the group share, generated once per group from a template or
// named, reserved for the group as a whole and living as long as the
// group. It remembers the PodGroups each scenario created.
package podgroups

// Package attributes holds the steps of the newer kinds of device
// attributes: list-type attributes (KEP-5491), attributes a claim derives
// with CEL (KEP-6080), the standard numaNode attribute (KEP-6072) and
// fractional request policy ranges of consumable capacity (KEP-5075's
// fractional-range.feature): what the API server and the scheduler do
// with them, mostly on pools of the kit's test driver, and the NUMA nodes
// read from the node's sysfs. It remembers the NUMA node each of a
// scenario's claims selects.
package attributes

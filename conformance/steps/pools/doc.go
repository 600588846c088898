// Package pools holds the steps of the pools the kit publishes under its
// own test driver (kit.TestDriverName): what the API server accepts of a
// pool's slices, counters, partition types and compatibility groups, and
// how the scheduler allocates their devices, for what no real driver
// would publish.
package pools

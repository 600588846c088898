// Package inventory divides the devices a DRA driver publishes into units
// that scenarios can use independently of one another, tells what the
// partitions of each unit are (how many of a profile fit together, which
// profile excludes every other), and leases units to concurrent scenarios.
//
// A unit is the smallest set of devices that no other device interferes
// with: devices that draw on one counter set (a GPU's whole device and its
// partitions, KEP-4815) are one unit, and so are a device and the partitions
// that name it as their parent (pre-created MIG devices of a GPU, also when
// the GPU itself is not published); every
// other device is a unit of its own. Two scenarios that hold different units
// can allocate, prepare and release devices side by side without one ever
// seeing the other's allocations in its counters.
//
// Partition roles describe partitions by what their counters allow, never by
// their names, so that the kit exercises any driver's counter-based
// partitions (MIG's "1g.10gb", or a driver's "quarter"): RoleSmallest is the
// profile of which the most fit one unit together (at least two), RoleHalf a
// profile of which exactly two fit, RoleExclusive a profile each of whose
// partitions excludes every other partition of its unit.
//
// Leases: a Pool hands out units first fit, in the order scenarios ask: a
// scenario whose units are free runs, one that must wait holds up no other,
// and one that disturbs the driver for everyone (Exclusive) runs once no
// unit is held. A Demand says
// what a scenario needs (whole devices, possibly sharing an attribute value;
// units with partitions of a role; units with partitions that consume no
// counters) and Acquire blocks until the units are free, so scenarios whose
// demands overlap wait for one another and the others run concurrently. A
// demand the inventory can never meet is refused with ErrNeverSatisfiable at
// once rather than waited on. The caller releases every lease it acquired;
// Release is idempotent.
package inventory

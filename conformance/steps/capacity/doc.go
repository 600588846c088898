// Package capacity holds the steps of KEP-5075, consumable capacity
// (features/kep-5075-consumable-capacity): claims that share one of the
// driver's shared devices (allowMultipleAllocations), each consuming part of
// its declared shared capacity, judged by what the API server stored against
// the request policy the driver published. It remembers the shared device
// a scenario's claims share and what each claim asked of it.
package capacity

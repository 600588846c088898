// Package prioritized holds the steps of KEP-4816, prioritized alternatives
// in device requests (features/kep-4816-prioritized-list): claims whose
// request lists firstAvailable subrequests of the driver's DeviceClass,
// and what the scheduler chose and passed on. The prioritized lists of
// partitions and whole devices are the kit's partition steps.
package prioritized

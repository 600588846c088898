// Package metadata holds the steps of KEP-5304, device metadata
// (features/kep-5304-device-metadata): the metadata files a driver's
// kubelet plugin writes for each request of a prepared claim and has the
// runtime bind-mount, read-only, into the claim's containers, as the probe
// finds them, compared with the claim, its allocation and the allocated
// devices' ResourceSlice attributes that the API server stored.
package metadata

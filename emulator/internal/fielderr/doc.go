// Package fielderr holds what the parts of a node profile (packages
// emulator/platform, emulator/gpu, emulator/nic and emulator/profile) share
// to report problems: the ErrInvalid sentinel that every content error of a
// profile matches, and small helpers that build field.Error values with
// the profile's wording ("Duplicate value: 2: also spec.gpus[1].minor").
// It knows no hardware.
package fielderr

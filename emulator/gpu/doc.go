// Package gpu is the NVIDIA GPU kind of a node profile: the schema of
// spec.gpus[*] (GPU, with its MIG section MIGConfig), the GPU catalogue,
// the MIG profile tables, and the defaulting and validation of the GPUs.
//
// # Catalogue
//
// Models lists the GPU catalogue (A100-SXM4-40GB, A100-SXM4-80GB,
// H100-80GB-HBM3, H200-141GB-HBM3e) with the values real boards report
// (catalogue.go marks the unverified ones). A GPU names a model; every
// model field left unset takes the model's value, and every field set
// explicitly overrides it.
//
// # MIG
//
// LookupMIGTable gives a model's MIG GPU-instance profiles (real driver
// profile IDs, NVML indexes, slices, memory, engines, placements) and derives
// its compute-instance profiles; mig.go names the source of every value and
// marks what is unverified. A static layout resolves (GPU.MIGLayout) to GPU
// instances with NVML's ids: the GI id is a function of the placement (GIID:
// 0 for 0:8, 1 and 2 for 4:4 and 0:4, 3..6 for the quarters, 7..14 for the
// eighths, upper half first), CI ids count 0, 1, … in listed order. Named
// layouts place GIs as the driver does without a placement: largest first,
// each at the highest free start. Validate rejects MIG on GPUs that are not
// MIG capable or have no MIG table, unknown profiles and layouts, placements
// a profile does not have, overlaps, more GIs of a profile than its
// instanceCount, more than 7 compute slices and more than 7 MIG devices.
//
// # Contract
//
// Default and Validate work on one list of GPUs with the profile's field
// paths (spec.gpus[i]…); the document around them, the UUID seed and the
// root complexes come from the caller (package emulator/profile). A GPU is
// placed in the PCIe tree through the caller's platform.Placer, which the
// other kinds of device share, so buses stay unique across kinds. UUIDs are
// derived (DeriveUUID, DeriveMIGUUID) from the seed and the GPU's address,
// so one profile always renders the same UUIDs. Errors of MIGLayout match
// errors.Is(err, profile.ErrInvalid). The package imports no other device
// kind.
package gpu

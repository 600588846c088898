package nvml_test

import (
	"encoding/binary"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
)

// healthView is what NVML's health queries report about a GPU.
type healthView struct {
	SBEVolatile, DBEVolatile, SBEAggregate, DBEAggregate uint64
	DRAMDBEVolatile, L1DBEVolatile                       uint64 // GetMemoryErrorCounter
	ECCCurrent, ECCPending                               gonvml.EnableState
	RetiredSBE, RetiredDBE                               []uint64
	RetiredPending                                       gonvml.EnableState
	RemappedCor, RemappedUnc                             int
	RemapPending, RemapFailure                           bool
	Reasons, ThrottleReasons                             uint64
	Temperature                                          uint32
	// Fields are GetFieldValues' answers: value (or -1) per field id.
	Fields map[uint32]int64
}

// healthFields are the field ids observeHealth asks for; 1000 is one the
// shim does not support.
var healthFields = []uint32{
	gonvml.FI_DEV_ECC_CURRENT, gonvml.FI_DEV_ECC_SBE_VOL_TOTAL, gonvml.FI_DEV_ECC_DBE_VOL_TOTAL,
	gonvml.FI_DEV_ECC_SBE_AGG_TOTAL, gonvml.FI_DEV_ECC_DBE_AGG_TOTAL, gonvml.FI_DEV_ECC_DBE_VOL_DEV,
	gonvml.FI_DEV_RETIRED_SBE, gonvml.FI_DEV_RETIRED_DBE, gonvml.FI_DEV_RETIRED_PENDING,
	gonvml.FI_DEV_REMAPPED_COR, gonvml.FI_DEV_REMAPPED_UNC, gonvml.FI_DEV_REMAPPED_PENDING,
	gonvml.FI_DEV_REMAPPED_FAILURE, gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION, 1000,
}

func pages(n int, cause uint64) []uint64 {
	out := []uint64{}
	for i := 0; i < n; i++ {
		out = append(out, 0x100000000*(cause+1)+0x1000*uint64(i))
	}
	return out
}

func enable(b bool) gonvml.EnableState {
	if b {
		return gonvml.FEATURE_ENABLED
	}
	return gonvml.FEATURE_DISABLED
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// wantHealth is what the shim must report for fault state f.
func wantHealth(f nvmlstate.Fault) healthView {
	return healthView{
		SBEVolatile: f.SBEVolatile, DBEVolatile: f.DBEVolatile, SBEAggregate: f.SBEAggregate, DBEAggregate: f.DBEAggregate,
		DRAMDBEVolatile: f.DBEVolatile, ECCCurrent: gonvml.FEATURE_ENABLED, ECCPending: gonvml.FEATURE_ENABLED,
		RetiredSBE: pages(f.RetiredSBE, 0), RetiredDBE: pages(f.RetiredDBE, 1), RetiredPending: enable(f.RetiredPending),
		RemappedCor: f.RemappedCorrectable, RemappedUnc: f.RemappedUncorrectable,
		RemapPending: f.RemapPending, RemapFailure: f.RemapFailure,
		Reasons: f.ClocksEventReasons, ThrottleReasons: f.ClocksEventReasons, Temperature: uint32(f.Temperature),
		Fields: map[uint32]int64{
			gonvml.FI_DEV_ECC_CURRENT: 1, gonvml.FI_DEV_ECC_SBE_VOL_TOTAL: int64(f.SBEVolatile),
			gonvml.FI_DEV_ECC_DBE_VOL_TOTAL: int64(f.DBEVolatile), gonvml.FI_DEV_ECC_SBE_AGG_TOTAL: int64(f.SBEAggregate),
			gonvml.FI_DEV_ECC_DBE_AGG_TOTAL: int64(f.DBEAggregate), gonvml.FI_DEV_ECC_DBE_VOL_DEV: int64(f.DBEVolatile),
			gonvml.FI_DEV_RETIRED_SBE: int64(f.RetiredSBE), gonvml.FI_DEV_RETIRED_DBE: int64(f.RetiredDBE),
			gonvml.FI_DEV_RETIRED_PENDING: b2i(f.RetiredPending), gonvml.FI_DEV_REMAPPED_COR: int64(f.RemappedCorrectable),
			gonvml.FI_DEV_REMAPPED_UNC: int64(f.RemappedUncorrectable), gonvml.FI_DEV_REMAPPED_PENDING: b2i(f.RemapPending),
			gonvml.FI_DEV_REMAPPED_FAILURE: b2i(f.RemapFailure), gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION: int64(f.RecoveryAction),
			1000: -1,
		},
	}
}

// observeHealth asks d every health query; failed calls are test errors.
func observeHealth(t testing.TB, d gonvml.Device) healthView {
	t.Helper()
	check := func(what string, ret gonvml.Return) {
		t.Helper()
		if ret != gonvml.SUCCESS {
			t.Errorf("%s: %v", what, ret)
		}
	}
	var v healthView
	var ret gonvml.Return
	for _, c := range []struct {
		out *uint64
		e   gonvml.MemoryErrorType
		c   gonvml.EccCounterType
	}{
		{&v.SBEVolatile, gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.VOLATILE_ECC},
		{&v.DBEVolatile, gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC},
		{&v.SBEAggregate, gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.AGGREGATE_ECC},
		{&v.DBEAggregate, gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.AGGREGATE_ECC},
	} {
		*c.out, ret = d.GetTotalEccErrors(c.e, c.c)
		check("GetTotalEccErrors", ret)
	}
	v.DRAMDBEVolatile, ret = d.GetMemoryErrorCounter(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC, gonvml.MEMORY_LOCATION_DRAM)
	check("GetMemoryErrorCounter(DRAM)", ret)
	v.L1DBEVolatile, ret = d.GetMemoryErrorCounter(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC, gonvml.MEMORY_LOCATION_L1_CACHE)
	check("GetMemoryErrorCounter(L1)", ret)
	v.ECCCurrent, v.ECCPending, ret = d.GetEccMode()
	check("GetEccMode", ret)
	v.RetiredSBE, ret = d.GetRetiredPages(gonvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
	check("GetRetiredPages(SBE)", ret)
	v.RetiredDBE, ret = d.GetRetiredPages(gonvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
	check("GetRetiredPages(DBE)", ret)
	v.RetiredPending, ret = d.GetRetiredPagesPendingStatus()
	check("GetRetiredPagesPendingStatus", ret)
	v.RemappedCor, v.RemappedUnc, v.RemapPending, v.RemapFailure, ret = d.GetRemappedRows()
	check("GetRemappedRows", ret)
	v.Reasons, ret = d.GetCurrentClocksEventReasons()
	check("GetCurrentClocksEventReasons", ret)
	v.ThrottleReasons, ret = d.GetCurrentClocksThrottleReasons()
	check("GetCurrentClocksThrottleReasons", ret)
	v.Temperature, ret = d.GetTemperature(gonvml.TEMPERATURE_GPU)
	check("GetTemperature", ret)
	values := make([]gonvml.FieldValue, len(healthFields))
	for i, id := range healthFields {
		values[i].FieldId = id
	}
	check("GetFieldValues", d.GetFieldValues(values))
	v.Fields = map[uint32]int64{}
	for _, fv := range values {
		switch {
		case gonvml.Return(fv.NvmlReturn) != gonvml.SUCCESS:
			v.Fields[fv.FieldId] = -1
		case fv.ValueType == uint32(gonvml.VALUE_TYPE_UNSIGNED_INT):
			v.Fields[fv.FieldId] = int64(binary.NativeEndian.Uint32(fv.Value[:4]))
		default:
			v.Fields[fv.FieldId] = int64(binary.NativeEndian.Uint64(fv.Value[:]))
		}
	}
	return v
}

// TestHealthQueries: the health queries read back each GPU's fault record
// (a GPU without one is healthy), and a MIG device answers with its GPU's.
func TestHealthQueries(t *testing.T) {
	s := nvmltest.MIGSampleState()
	s.Faults = []nvmlstate.Fault{{
		GPU: 1, SBEVolatile: 3, DBEVolatile: 1, SBEAggregate: 7, DBEAggregate: 2, RetiredSBE: 1, RetiredDBE: 2,
		RetiredPending: true, RemappedCorrectable: 4, RemappedUncorrectable: 1, RemapPending: true, RemapFailure: true,
		RecoveryAction: nvmlstate.RecoveryDrainAndReset, ClocksEventReasons: 0x48, Temperature: 91,
	}}
	lib := newLib(t)
	initLib(t, lib, nvmltest.NewMIGRoot(t, s))
	for i, want := range []nvmlstate.Fault{nvmlstate.Healthy(0), s.Faults[0], nvmlstate.Healthy(3)} {
		d, _ := lib.DeviceGetHandleByIndex(i)
		if diff := cmp.Diff(wantHealth(want), observeHealth(t, d)); diff != "" {
			t.Errorf("GPU %d health (-want +got):\n%s", i, diff)
		}
	}
	mig, ret := lib.DeviceGetHandleByUUID(s.ComputeInstances[0].UUID)
	if ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	if diff := cmp.Diff(wantHealth(s.Faults[0]), observeHealth(t, mig)); diff != "" {
		t.Errorf("MIG device health (-want +got):\n%s", diff)
	}
	d0, _ := lib.DeviceGetHandleByIndex(0)
	if _, ret := d0.GetTemperature(gonvml.TEMPERATURE_COUNT); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("GetTemperature(an unknown sensor) = %v, want INVALID_ARGUMENT", ret)
	}
	if _, ret := d0.GetTotalEccErrors(gonvml.MEMORY_ERROR_TYPE_COUNT, gonvml.VOLATILE_ECC); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("GetTotalEccErrors(an unknown error type) = %v, want INVALID_ARGUMENT", ret)
	}
}

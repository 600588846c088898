/*
 * NVML_STUB(name) defines an exported weak function that returns
 * NVML_ERROR_NOT_SUPPORTED (3). nvml_stubs_gen.c applies it to every function
 * nvml.h declares; the shim's strong definitions override the weak ones at
 * link time.
 *
 * A stub is declared without parameters and with an int return: on the
 * x86-64 and AArch64 System V ABIs the caller owns its arguments (registers
 * and stack alike) and an nvmlReturn_t comes back in the int return register,
 * so a callee that ignores its arguments may omit them. This keeps the
 * generated file independent of nvml.h's several hundred types. Only
 * functions returning nvmlReturn_t are stubbed (the generator enforces it).
 * This file must not include nvml_abi.h: with the real nvml.h the parameterless
 * declarations would conflict with NVML's prototypes.
 */
#ifndef DRAKIT_NVML_STUBS_H
#define DRAKIT_NVML_STUBS_H

#define DRAKIT_NVML_ERROR_NOT_SUPPORTED 3

#define NVML_STUB(name)                                                      \
    __attribute__((weak, visibility("default"))) int name(void);             \
    __attribute__((weak, visibility("default"))) int name(void) {            \
        return DRAKIT_NVML_ERROR_NOT_SUPPORTED;                              \
    }

#endif /* DRAKIT_NVML_STUBS_H */

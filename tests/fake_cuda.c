/* fake_cuda.c - a fake CUDA driver for the tests: the few calls the plugin makes (the current
 * context and its device, a device's PCI bus id), plus fakecuda_set_device, through which
 * nccl-sim (--cuda) makes a device current on a thread, as cudaSetDevice does.
 *
 * Built as libcuda.so.1 (SONAME libcuda.so.1) in the build tree's fakecupti/ directory; nccl-sim
 * loads it, and the plugin finds it loaded (dlopen with RTLD_NOLOAD), as it finds the driver the
 * CUDA runtime loaded in a real process. A thread that made no device current has no context,
 * and cuCtxGetCurrent says so (a NULL context), as the real driver does. */
#include <stdint.h>
#include <stdio.h>

#define EXPORT __attribute__((visibility("default")))

static _Thread_local int t_device = -1;

/* contexts are fake pointers, one per device: never dereferenced by anyone */
#define CTX(d) ((void *)(uintptr_t)(0xC7C70000u + (unsigned)(d)))

EXPORT void fakecuda_set_device(int device) { t_device = device; }

EXPORT int cuCtxGetCurrent(void **ctx) {
  *ctx = t_device >= 0 ? CTX(t_device) : NULL;
  return 0;
}

EXPORT int cuCtxGetDevice(int *device) {
  if (t_device < 0) return 201; /* CUDA_ERROR_INVALID_CONTEXT */
  *device = t_device;
  return 0;
}

EXPORT int cuDeviceGetPCIBusId(char *bus, int len, int device) {
  snprintf(bus, (size_t)len, "00000000:%02x:00.0", device & 0xFF);
  return 0;
}

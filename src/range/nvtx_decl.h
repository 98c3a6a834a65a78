/* nvtx_decl.h - the part of NVTX's tool interface the plugin implements, declared here.
 *
 * NVTX v3 is a header-only library: every library or program that includes it carries its own
 * copy, whose first call loads the library named by NVTX_INJECTION64_PATH and calls its
 * InitializeInjectionNvtx2 with a function that hands out export tables. The tool asks the
 * callbacks table for the function table of each module (core, core2 for domains) and writes its
 * own functions into the slots it implements; slots left empty stay no-ops. The plugin builds
 * without NVTX's headers, so it declares what it uses itself, as src/abi/ncs_abi.h does for NCCL;
 * tests/test_nvtx_decl.c checks every value and layout against the real headers wherever a CUDA
 * toolkit (or NVTX) is installed.
 */
#ifndef NCS_RANGE_NVTX_DECL_H
#define NCS_RANGE_NVTX_DECL_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

/* export tables (NvtxExportTableID) and callback modules (NvtxCallbackModule) */
enum { NCS_NVTX_ETID_CALLBACKS = 1 };
enum { NCS_NVTX_CB_MODULE_CORE = 1, NCS_NVTX_CB_MODULE_CORE2 = 5 };

/* slots of the core module (NvtxCallbackIdCore): the default domain */
enum {
  NCS_NVTX_CBID_CORE_MarkEx = 1,
  NCS_NVTX_CBID_CORE_MarkA = 2,
  NCS_NVTX_CBID_CORE_MarkW = 3,
  NCS_NVTX_CBID_CORE_RangeStartEx = 4,
  NCS_NVTX_CBID_CORE_RangeStartA = 5,
  NCS_NVTX_CBID_CORE_RangeStartW = 6,
  NCS_NVTX_CBID_CORE_RangeEnd = 7,
  NCS_NVTX_CBID_CORE_RangePushEx = 8,
  NCS_NVTX_CBID_CORE_RangePushA = 9,
  NCS_NVTX_CBID_CORE_RangePushW = 10,
  NCS_NVTX_CBID_CORE_RangePop = 11,
};

/* slots of the core2 module (NvtxCallbackIdCore2): domains and registered strings */
enum {
  NCS_NVTX_CBID_CORE2_DomainMarkEx = 1,
  NCS_NVTX_CBID_CORE2_DomainRangeStartEx = 2,
  NCS_NVTX_CBID_CORE2_DomainRangeEnd = 3,
  NCS_NVTX_CBID_CORE2_DomainRangePushEx = 4,
  NCS_NVTX_CBID_CORE2_DomainRangePop = 5,
  NCS_NVTX_CBID_CORE2_DomainRegisterStringA = 10,
  NCS_NVTX_CBID_CORE2_DomainRegisterStringW = 11,
  NCS_NVTX_CBID_CORE2_DomainCreateA = 12,
  NCS_NVTX_CBID_CORE2_DomainCreateW = 13,
  NCS_NVTX_CBID_CORE2_DomainDestroy = 14,
};

/* message types (nvtxMessageType_t) and payload types (nvtxPayloadType_t) of an event attribute */
enum {
  NCS_NVTX_MESSAGE_UNKNOWN = 0,
  NCS_NVTX_MESSAGE_TYPE_ASCII = 1,
  NCS_NVTX_MESSAGE_TYPE_UNICODE = 2,
  NCS_NVTX_MESSAGE_TYPE_REGISTERED = 3,
};
enum {
  NCS_NVTX_PAYLOAD_UNKNOWN = 0,
  NCS_NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 = 1,
  NCS_NVTX_PAYLOAD_TYPE_INT64 = 2,
  NCS_NVTX_PAYLOAD_TYPE_DOUBLE = 3,
  NCS_NVTX_PAYLOAD_TYPE_UNSIGNED_INT32 = 4,
  NCS_NVTX_PAYLOAD_TYPE_INT32 = 5,
  NCS_NVTX_PAYLOAD_TYPE_FLOAT = 6,
};

typedef void *ncs_nvtx_domain_t;  /* nvtxDomainHandle_t: opaque, handed out by the tool */
typedef void *ncs_nvtx_string_t;  /* nvtxStringHandle_t: opaque, handed out by the tool */
typedef uint64_t ncs_nvtx_range_id_t; /* nvtxRangeId_t */

/* nvtxEventAttributes_t (version 2 and 3 share it). `size` says how much of it the caller
 * filled: fields past it are read as absent. */
typedef struct {
  uint16_t version;
  uint16_t size;
  uint32_t category;
  int32_t colorType;
  uint32_t color;
  int32_t payloadType;
  int32_t reserved0;
  union {
    uint64_t ullValue;
    int64_t llValue;
    double dValue;
    uint32_t uiValue;
    int32_t iValue;
    float fValue;
  } payload;
  int32_t messageType;
  union {
    const char *ascii;
    const wchar_t *unicode;
    ncs_nvtx_string_t registered;
  } message;
} ncs_nvtx_attr_t;

_Static_assert(offsetof(ncs_nvtx_attr_t, payload) == 24, "nvtx attributes: payload");
_Static_assert(offsetof(ncs_nvtx_attr_t, messageType) == 32, "nvtx attributes: messageType");
_Static_assert(offsetof(ncs_nvtx_attr_t, message) == 40, "nvtx attributes: message");
_Static_assert(sizeof(ncs_nvtx_attr_t) == 48, "nvtx attributes: size");

/* the tool side of the export tables */
typedef void (*ncs_nvtx_fn_t)(void);   /* NvtxFunctionPointer: cast to the slot's real type */
typedef ncs_nvtx_fn_t **ncs_nvtx_table_t; /* NvtxFunctionTable: slot n is *table[n] */
typedef struct {
  size_t struct_size;
  int (*GetModuleFunctionTable)(int module, ncs_nvtx_table_t *table, unsigned int *size);
} ncs_nvtx_callbacks_t; /* NvtxExportTableCallbacks */
typedef const void *(*ncs_nvtx_get_export_table_fn)(uint32_t id); /* NvtxGetExportTableFunc_t */

/* the entry point a tool exports (NvtxInitializeInjectionNvtxFunc_t): 1 attached, 0 not */
int InitializeInjectionNvtx2(ncs_nvtx_get_export_table_fn get);

#endif

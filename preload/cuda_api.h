/*
 * cuda_api.h - the few CUDA driver and runtime types wsprof needs, declared
 * here so that building wsprof needs no CUDA toolkit. Values and layouts
 * are those of cuda.h / cuda_runtime_api.h (CUDA 11 to 13, x86-64).
 */
#ifndef WSP_CUDA_API_H
#define WSP_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_INITIALIZED 3
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef uint64_t cuuint64_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef void (*CUhostFn)(void *user_data);
typedef struct CUfunc_st *CUfunction;
/* cuLaunchKernelEx's configuration; wsprof passes it on unread. */
typedef struct CUlaunchConfig_st CUlaunchConfig;

#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2

typedef struct {
	int type;
	int requestedHandleTypes;
	struct {
		int type;
		int id;    /* the device, for CU_MEM_LOCATION_TYPE_DEVICE */
	} location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType, gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} CUmemAllocationProp;

typedef int cudaError_t;
typedef struct CUstream_st *cudaStream_t;
typedef struct CUmemPoolHandle_st *cudaMemPool_t;

#endif

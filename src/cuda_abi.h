/*
 * cuda_abi.h - the CUDA driver and runtime types wsprof and its tests
 * share, declared here so that building and testing wsprof needs no CUDA
 * toolkit. Values and layouts are those of cuda.h / cuda_runtime_api.h
 * (CUDA 11 to 13, x86-64). The recorder (preload/hooks/hooks_cuda.c) needs no
 * more; tests/cuda/cuda_min.h adds the entry points the tests call.
 */
#ifndef WSP_CUDA_ABI_H
#define WSP_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_IMAGE = 200,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
	CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
} CUresult;
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

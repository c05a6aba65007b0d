// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
/* Single-rank stand-in for libhccl.so, compiled against the real hccl.h from the torch-npu wheel
 * as C++ (the header sizes arrays with C++ constants). Everything here is inside extern "C", so a
 * definition whose prototype disagrees with the header is a compile error. Buffers are
 * host memory; with one rank every collective is a copy. The last call's scalar arguments are
 * kept so the test can see what arrived through ctypes. */
#include <string.h>
#include "hccl/hccl.h"

extern "C" {

static uint64_t last_count;
static int last_dtype = -1, last_op = -1;
static uint32_t last_peer;
static void *last_stream;
static int comm_token;
static void *const kComm = &comm_token;

uint64_t fake_last_count(void) { return last_count; }
int fake_last_dtype(void) { return last_dtype; }
int fake_last_op(void) { return last_op; }
uint32_t fake_last_peer(void) { return last_peer; }
void *fake_last_stream(void) { return last_stream; }

static size_t elem_size(HcclDataType t) {
    switch (t) {
        case HCCL_DATA_TYPE_INT8: case HCCL_DATA_TYPE_UINT8: return 1;
        case HCCL_DATA_TYPE_INT16: case HCCL_DATA_TYPE_UINT16: case HCCL_DATA_TYPE_FP16:
        case HCCL_DATA_TYPE_BFP16: return 2;
        case HCCL_DATA_TYPE_INT32: case HCCL_DATA_TYPE_UINT32: case HCCL_DATA_TYPE_FP32: return 4;
        default: return 8;
    }
}

static void note(uint64_t count, int dtype, int op, uint32_t peer, aclrtStream stream) {
    last_count = count; last_dtype = dtype; last_op = op; last_peer = peer; last_stream = stream;
}

const char *HcclGetErrorString(HcclResult code) { return code == HCCL_E_PTR ? "fake: null pointer" : "fake"; }

HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo) {
    if (!rootInfo) return HCCL_E_PTR;
    memset(rootInfo->internal, 0x5a, HCCL_ROOT_INFO_BYTES);
    return HCCL_SUCCESS;
}

HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank, HcclComm *comm) {
    if (!rootInfo || !comm) return HCCL_E_PTR;
    if (nRanks != 1 || rank != 0 || rootInfo->internal[7] != 0x5a) return HCCL_E_PARA;
    *comm = kComm;
    return HCCL_SUCCESS;
}

HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType,
    HcclReduceOp op, HcclComm comm, aclrtStream stream) {
    if (comm != kComm) return HCCL_E_PTR;
    note(count, dataType, op, 0, stream);
    memmove(recvBuf, sendBuf, count * elem_size(dataType));
    return HCCL_SUCCESS;
}

HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
    aclrtStream stream) {
    if (comm != kComm) return HCCL_E_PTR;
    note(count, dataType, -1, root, stream);
    return HCCL_SUCCESS;
}

HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf, uint64_t recvCount, HcclDataType dataType,
    HcclReduceOp op, HcclComm comm, aclrtStream stream) {
    if (comm != kComm) return HCCL_E_PTR;
    note(recvCount, dataType, op, 0, stream);
    memmove(recvBuf, sendBuf, recvCount * elem_size(dataType));
    return HCCL_SUCCESS;
}

HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount, HcclDataType dataType,
    HcclComm comm, aclrtStream stream) {
    if (comm != kComm) return HCCL_E_PTR;
    note(sendCount, dataType, -1, 0, stream);
    memmove(recvBuf, sendBuf, sendCount * elem_size(dataType));
    return HCCL_SUCCESS;
}

HcclResult HcclSend(void *sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank,
    HcclComm comm, aclrtStream stream) {
    if (comm != kComm) return HCCL_E_PTR;
    note(count, dataType, -1, destRank, stream);
    return HCCL_SUCCESS;
}

HcclResult HcclRecv(void *recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank,
    HcclComm comm, aclrtStream stream) {
    if (comm != kComm) return HCCL_E_PTR;
    note(count, dataType, -1, srcRank, stream);
    return HCCL_SUCCESS;
}

HcclResult HcclCommDestroy(HcclComm comm) { return comm == kComm ? HCCL_SUCCESS : HCCL_E_PTR; }

}  // extern "C"

#pragma once
// NCCL, found at run time like cuDNN (vendor_libraries.hpp: --nccl, $ROOFLENS_NCCL, the loader,
// PyTorch's nvidia-nccl wheel) and called through a table of its C entry points, so that the GPU
// module links no NCCL and loads without one. The collectives are issued with nccl-tests' size
// conventions (link_model.hpp), the ones the link model and the device profile's curves use.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <string>

#include "analyzer/core/dtype.hpp"
#include "analyzer/hw/link_model.hpp"

namespace rooflens::kernels::nccl {

struct Api {
  ncclResult_t (*get_version)(int*) = nullptr;
  const char* (*error_string)(ncclResult_t) = nullptr;
  ncclResult_t (*get_unique_id)(ncclUniqueId*) = nullptr;
  ncclResult_t (*comm_init_rank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*comm_init_all)(ncclComm_t*, int, const int*) = nullptr;
  ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
  ncclResult_t (*all_reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t) = nullptr;
  ncclResult_t (*all_gather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                             cudaStream_t) = nullptr;
  ncclResult_t (*reduce_scatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                 ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, ncclComm_t,
                       cudaStream_t) = nullptr;
  ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*group_start)() = nullptr;
  ncclResult_t (*group_end)() = nullptr;
  // NCCL 2.28 and later; older ones run all-to-all as grouped sends and receives.
  ncclResult_t (*all_to_all)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                             cudaStream_t) = nullptr;
};

class Runtime {
 public:
  // `directory`: --nccl (may be empty). Loads at most once per process.
  static Runtime& load(const std::string& directory);
  bool available() const { return api_.all_reduce != nullptr; }
  const Api& api() const { return api_; }
  // "NCCL 2.28.9 (/path/libnccl.so.2)" or why there is none.
  const std::string& status() const { return status_; }

 private:
  Api api_;
  std::string status_;
};

// CudaError naming the call and NCCL's reason.
void check(const Api& api, ncclResult_t r, const char* what);

// The unique id rank 0 makes and the other ranks join with, as hex text (it crosses processes
// in the environment), and back; InputError on malformed text.
std::string unique_id_text(const ncclUniqueId& id);
ncclUniqueId unique_id_from_text(const std::string& text);

// One rank's communicator, destroyed with it.
class Communicator {
 public:
  Communicator(const Runtime& rt, ncclComm_t comm, int rank, int ranks)
      : rt_(&rt), comm_(comm), rank_(rank), ranks_(ranks) {}
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();
  ncclComm_t get() const { return comm_; }
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

 private:
  const Runtime* rt_;
  ncclComm_t comm_;
  int rank_, ranks_;
};

// Enqueues one rank's part of the collective on `s` (send/recv: to the next rank, from the
// previous one; all-to-all: one chunk to and from every rank). `bytes` from
// collective_buffers (collective_curves.hpp).
void launch(const Api& api, Collective c, const void* send, void* recv, int64_t bytes, DType dtype,
            const Communicator& comm, cudaStream_t s);

}  // namespace rooflens::kernels::nccl

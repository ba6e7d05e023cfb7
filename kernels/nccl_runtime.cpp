#include "kernels/nccl_runtime.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
#include <mutex>

#include "analyzer/core/errors.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/vendor_libraries.hpp"

namespace rooflens::kernels::nccl {

namespace {

namespace fs = std::filesystem;

template <class F>
bool bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::bf16:
      return ncclBfloat16;
    case DType::f16:
      return ncclFloat16;
    case DType::f32:
      return ncclFloat32;
    default:
      return ncclUint8;  // moved, not reduced (collective_size keeps reductions on float types)
  }
}

}  // namespace

Runtime& Runtime::load(const std::string& directory) {
  static Runtime runtime;
  static std::once_flag once;
  std::call_once(once, [&] {
    void* lib = nullptr;
    std::string where, first_error;
    for (const std::string& dir : vendor_search_directories(directory, "ROOFLENS_NCCL", "nccl")) {
      std::string path = dir.empty() ? "libnccl.so.2" : dir + "/libnccl.so.2";
      if (!dir.empty() && !fs::exists(path)) {
        if (dir == directory) first_error = fmt::format("{}: no libnccl.so.2", dir);
        continue;
      }
      lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib) {
        where = path;
        break;
      }
      if (!dir.empty() && first_error.empty()) first_error = fmt::format("{}: {}", path, dlerror());
    }
    if (!lib) {
      runtime.status_ =
          "NCCL not found (--nccl DIR or ROOFLENS_NCCL name the directory of libnccl.so.2)";
      if (!first_error.empty()) runtime.status_ += "; " + first_error;
      return;
    }
    Api a;
    bool ok = bind(lib, "ncclGetVersion", a.get_version) &&
              bind(lib, "ncclGetErrorString", a.error_string) &&
              bind(lib, "ncclGetUniqueId", a.get_unique_id) &&
              bind(lib, "ncclCommInitRank", a.comm_init_rank) &&
              bind(lib, "ncclCommInitAll", a.comm_init_all) &&
              bind(lib, "ncclCommDestroy", a.comm_destroy) &&
              bind(lib, "ncclAllGather", a.all_gather) &&
              bind(lib, "ncclReduceScatter", a.reduce_scatter) && bind(lib, "ncclSend", a.send) &&
              bind(lib, "ncclRecv", a.recv) && bind(lib, "ncclGroupStart", a.group_start) &&
              bind(lib, "ncclGroupEnd", a.group_end) && bind(lib, "ncclAllReduce", a.all_reduce);
    if (!ok) {
      runtime.status_ =
          fmt::format("{} lacks an entry point rooflens calls (NCCL 2.7 or later needed)", where);
      return;
    }
    bind(lib, "ncclAlltoAll", a.all_to_all);  // optional
    int version = 0;
    a.get_version(&version);
    runtime.api_ = a;
    runtime.status_ = fmt::format("NCCL {}.{}.{} ({})", version / 10000, version / 100 % 100,
                                  version % 100, where);
  });
  return runtime;
}

void check(const Api& api, ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw CudaError(
        fmt::format("{}: {}", what, api.error_string ? api.error_string(r) : "NCCL error"));
}

std::string unique_id_text(const ncclUniqueId& id) {
  std::string out;
  for (char c : id.internal) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

ncclUniqueId unique_id_from_text(const std::string& text) {
  ncclUniqueId id{};
  if (text.size() != 2 * sizeof(id.internal))
    throw InputError("malformed NCCL unique id in the environment");
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    unsigned v = 0;
    if (std::sscanf(text.c_str() + 2 * i, "%2x", &v) != 1)
      throw InputError("malformed NCCL unique id in the environment");
    id.internal[i] = static_cast<char>(v);
  }
  return id;
}

Communicator::~Communicator() {
  if (comm_) rt_->api().comm_destroy(comm_);
}

void launch(const Api& api, Collective c, const void* send, void* recv, int64_t bytes, DType dtype,
            const Communicator& comm, cudaStream_t s) {
  ncclDataType_t t = nccl_type(dtype);
  int64_t esize = t == ncclUint8 ? 1 : storage_bytes(dtype, 1);
  int n = comm.ranks(), r = comm.rank();
  size_t count = static_cast<size_t>(bytes / esize);
  switch (c) {
    case Collective::all_reduce:
      check(api, api.all_reduce(send, recv, count, t, ncclSum, comm.get(), s), "ncclAllReduce");
      return;
    case Collective::all_gather:
      check(api, api.all_gather(send, recv, count / n, t, comm.get(), s), "ncclAllGather");
      return;
    case Collective::reduce_scatter:
      check(api, api.reduce_scatter(send, recv, count / n, t, ncclSum, comm.get(), s),
            "ncclReduceScatter");
      return;
    case Collective::all_to_all: {
      size_t chunk = count / n;
      if (api.all_to_all) {
        check(api, api.all_to_all(send, recv, chunk, t, comm.get(), s), "ncclAlltoAll");
        return;
      }
      check(api, api.group_start(), "ncclGroupStart");
      for (int peer = 0; peer < n; ++peer) {
        check(api,
              api.send(static_cast<const char*>(send) + peer * chunk * esize, chunk, t, peer,
                       comm.get(), s),
              "ncclSend");
        check(api,
              api.recv(static_cast<char*>(recv) + peer * chunk * esize, chunk, t, peer, comm.get(),
                       s),
              "ncclRecv");
      }
      check(api, api.group_end(), "ncclGroupEnd");
      return;
    }
    case Collective::send_recv:
      check(api, api.group_start(), "ncclGroupStart");
      check(api, api.send(send, count, t, (r + 1) % n, comm.get(), s), "ncclSend");
      check(api, api.recv(recv, count, t, (r + n - 1) % n, comm.get(), s), "ncclRecv");
      check(api, api.group_end(), "ncclGroupEnd");
      return;
  }
}

}  // namespace rooflens::kernels::nccl

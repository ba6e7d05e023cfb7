#include "profiler/gpu/calibrate_collectives.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <vector>

#include "analyzer/analysis/measurement.hpp"
#include "analyzer/core/errors.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/nccl_runtime.hpp"
#include "profiler/gpu/cupti_session.hpp"
#include "profiler/gpu/gpu_barrier.hpp"
#include "profiler/gpu/gpu_info.hpp"
#include "profiler/gpu/harness.hpp"

namespace rooflens::profiler {

namespace {

using Clock = std::chrono::steady_clock;
namespace nccl = kernels::nccl;

constexpr DType kDtype = DType::bf16;
constexpr int64_t kElement = 2;

// bf16 bits of a small integer (exact).
uint16_t bf16_of(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return static_cast<uint16_t>(bits >> 16);
}
float float_of(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

// Every GPU of the group: its communicator, stream and two buffers (send, receive) large
// enough for the largest size of every collective.
struct Rank {
  int device = 0;
  cudaStream_t stream = nullptr;
  kernels::DeviceBuffer send, recv;
  std::unique_ptr<nccl::Communicator> comm;
  std::unique_ptr<L2Flush> flush;
};

class Group {
 public:
  Group(int gpus, int64_t max_bytes, const nccl::Runtime& rt)
      : rt_(rt), ranks_(gpus), flags_(GpuBarrier::words(gpus, 1)), barrier_(flags_, gpus, 1) {
    std::vector<ncclComm_t> comms(gpus);
    std::vector<int> devices(gpus);
    for (int r = 0; r < gpus; ++r) devices[r] = r;
    nccl::check(rt.api(), rt.api().comm_init_all(comms.data(), gpus, devices.data()),
                "ncclCommInitAll");
    for (int r = 0; r < gpus; ++r) {
      Rank& k = ranks_[r];
      k.device = r;
      k.comm = std::make_unique<nccl::Communicator>(rt, comms[r], r, gpus);
      ROOFLENS_CUDA_CHECK(cudaSetDevice(r));
      ROOFLENS_CUDA_CHECK(cudaStreamCreateWithFlags(&k.stream, cudaStreamNonBlocking));
      k.send = kernels::DeviceBuffer(static_cast<size_t>(max_bytes));
      k.recv = kernels::DeviceBuffer(static_cast<size_t>(max_bytes));
      ROOFLENS_CUDA_CHECK(cudaMemset(k.send.get(), 0, max_bytes));
      cudaDeviceProp prop{};
      ROOFLENS_CUDA_CHECK(cudaGetDeviceProperties(&prop, r));
      k.flush = std::make_unique<L2Flush>(prop.l2CacheSize, prop.multiProcessorCount);
    }
    ROOFLENS_CUDA_CHECK(cudaSetDevice(0));
  }
  ~Group() {
    for (Rank& k : ranks_) {
      cudaSetDevice(k.device);
      if (k.stream) cudaStreamSynchronize(k.stream);
      k.comm.reset();
      if (k.stream) cudaStreamDestroy(k.stream);
    }
    cudaSetDevice(0);
  }
  // Every rank's part of one collective, in one NCCL group, from this thread.
  void launch(Collective c, int64_t bytes) {
    const nccl::Api& api = rt_.api();
    nccl::check(api, api.group_start(), "ncclGroupStart");
    for (Rank& k : ranks_) {
      ROOFLENS_CUDA_CHECK(cudaSetDevice(k.device));
      nccl::launch(api, c, k.send.get(), k.recv.get(), bytes, kDtype, *k.comm, k.stream);
    }
    nccl::check(api, api.group_end(), "ncclGroupEnd");
    ROOFLENS_CUDA_CHECK(cudaSetDevice(0));
  }
  // One sample's launch held on every GPU until the thread has launched it everywhere
  // (GpuBarrier): bracket the launch with hold_until_launched() and launched().
  // With `cold_l2`, each GPU's L2 is flushed first, as a model's layers leave it.
  void hold_until_launched(bool cold_l2) {
    barrier_.begin();
    for (Rank& k : ranks_) {
      ROOFLENS_CUDA_CHECK(cudaSetDevice(k.device));
      if (cold_l2) k.flush->run(k.stream);
      barrier_.hold(k.device, k.stream);
    }
    ROOFLENS_CUDA_CHECK(cudaSetDevice(0));
  }
  void launched() { barrier_.launched(0); }
  void synchronize() {
    for (Rank& k : ranks_) ROOFLENS_CUDA_CHECK(cudaStreamSynchronize(k.stream));
    barrier_.check();
  }
  std::vector<Rank>& ranks() { return ranks_; }

 private:
  const nccl::Runtime& rt_;
  std::vector<Rank> ranks_;
  HostFlags flags_;
  GpuBarrier barrier_;
};

// Checks one collective on known values: rank r's send buffer holds r + 1 in its chunk for
// peer p (all-to-all: 10 r + p + 1), so every element of every result is known exactly.
void verify(Group& g, Collective c) {
  int n = static_cast<int>(g.ranks().size());
  CollectiveBuffers b = collective_buffers(c, 64 << 10, n, kElement);
  int64_t elems = b.send / kElement, chunk = b.bytes / kElement / n;
  for (int r = 0; r < n; ++r) {
    std::vector<uint16_t> host(elems);
    for (int64_t i = 0; i < elems; ++i)
      host[i] = bf16_of(c == Collective::all_to_all ? static_cast<float>(10 * r + i / chunk + 1)
                                                    : static_cast<float>(r + 1));
    ROOFLENS_CUDA_CHECK(cudaSetDevice(r));
    ROOFLENS_CUDA_CHECK(
        cudaMemcpy(g.ranks()[r].send.get(), host.data(), b.send, cudaMemcpyHostToDevice));
  }
  ROOFLENS_CUDA_CHECK(cudaSetDevice(0));
  g.launch(c, b.bytes);
  g.synchronize();
  for (int r = 0; r < n; ++r) {
    std::vector<uint16_t> host(b.recv / kElement);
    ROOFLENS_CUDA_CHECK(cudaSetDevice(r));
    ROOFLENS_CUDA_CHECK(
        cudaMemcpy(host.data(), g.ranks()[r].recv.get(), b.recv, cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i < static_cast<int64_t>(host.size()); ++i) {
      float want = 0;
      switch (c) {
        case Collective::all_reduce:
        case Collective::reduce_scatter:
          want = n * (n + 1) / 2.0f;
          break;
        case Collective::all_gather:
          want = static_cast<float>(i / chunk + 1);  // chunk j came from rank j
          break;
        case Collective::all_to_all:
          want = static_cast<float>(10 * (i / chunk) + r + 1);  // rank j's chunk for this rank
          break;
        case Collective::send_recv:
          want = static_cast<float>((r + n - 1) % n + 1);  // from the previous rank
          break;
      }
      if (float_of(host[i]) != want) {
        ROOFLENS_CUDA_CHECK(cudaSetDevice(0));
        throw kernels::CudaError(
            fmt::format("NCCL {} over {} GPUs gave {} at element {} of rank {}, expected {}",
                        collective_name(c), n, float_of(host[i]), i, r, want));
      }
    }
  }
  ROOFLENS_CUDA_CHECK(cudaSetDevice(0));
}

struct SampleTimes {
  std::vector<double> kernel_s;  // per sample, the slowest device's NCCL kernels summed
  std::vector<double> skew_s;    // per sample, the latest device's first start less the earliest's
};

// The kernel time of every sample: per sample, each device's NCCL kernels summed, the slowest
// device's taken (every rank waits for the others inside the collective). Samples are told apart
// by the external id pushed around their launch.
SampleTimes kernel_times(const Trace& t, int samples) {
  std::map<uint32_t, uint64_t> external_of;
  for (const ExternalCorrelation& e : t.externals) external_of[e.correlation_id] = e.external_id;
  struct OnDevice {
    uint64_t ns = 0, first_start = UINT64_MAX;
  };
  std::map<int, std::map<uint32_t, OnDevice>> per;  // sample -> device
  for (const GpuActivity& a : t.activities) {
    if (a.kind != GpuActivity::Kind::kernel) continue;
    auto it = external_of.find(a.correlation_id);
    if (it == external_of.end()) continue;
    OnDevice& d = per[sample_of(it->second)][a.device];
    d.ns += a.end_ns - a.start_ns;
    d.first_start = std::min<uint64_t>(d.first_start, a.start_ns);
  }
  SampleTimes out;
  for (int s = 0; s < samples; ++s) {
    auto it = per.find(s);
    if (it == per.end()) continue;
    uint64_t slowest = 0, earliest = UINT64_MAX, latest = 0;
    for (const auto& [dev, d] : it->second) {
      slowest = std::max(slowest, d.ns);
      earliest = std::min(earliest, d.first_start);
      latest = std::max(latest, d.first_start);
    }
    out.kernel_s.push_back(slowest * 1e-9);
    out.skew_s.push_back((latest - earliest) * 1e-9);
  }
  return out;
}

// `reps` samples of one collective, each held on every GPU until the thread has launched it
// everywhere, so that it starts on all GPUs together as after a model's layer (launched one at a
// time, a small collective's kernel would mostly wait for the thread to reach the next GPU).
// With `cold_l2` every GPU's L2 is flushed before each sample.
SampleTimes time_kernels(Group& g, CuptiSession& cupti, Collective c, int64_t bytes, int reps,
                         bool cold_l2) {
  cupti.flush();
  for (int i = 0; i < reps; ++i) {
    g.hold_until_launched(cold_l2);
    cupti.push_external(external_id(0, i));
    g.launch(c, bytes);
    cupti.pop_external();
    g.launched();
    if (i % kHarnessBatch == kHarnessBatch - 1 || i == reps - 1) g.synchronize();
  }
  Trace t = cupti.flush();
  if (t.dropped > 0)
    throw kernels::CudaError(fmt::format("CUPTI dropped {} records timing NCCL", t.dropped));
  SampleTimes times = kernel_times(t, reps);
  if (static_cast<int>(times.kernel_s.size()) < reps)
    throw kernels::CudaError(
        fmt::format("NCCL {} of {} bytes: CUPTI saw the kernels of {} of {} samples",
                    collective_name(c), bytes, times.kernel_s.size(), reps));
  return times;
}

std::string topology_text(int gpus) {
  cudaDeviceProp prop{};
  ROOFLENS_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  bool all_peer = true;
  int rank = 0;
  for (int a = 0; a < gpus; ++a)
    for (int b = 0; b < gpus; ++b) {
      if (a == b) continue;
      int access = 0, perf = 0;
      ROOFLENS_CUDA_CHECK(cudaDeviceGetP2PAttribute(&access, cudaDevP2PAttrAccessSupported, a, b));
      ROOFLENS_CUDA_CHECK(cudaDeviceGetP2PAttribute(&perf, cudaDevP2PAttrPerformanceRank, a, b));
      all_peer = all_peer && access;
      rank = std::max(rank, perf);
    }
  return fmt::format(
      "{} x {}, {}", gpus, prop.name,
      all_peer ? fmt::format("peer-to-peer between every pair (CUDA P2P performance rank {})", rank)
               : std::string("no peer-to-peer between some pairs (through host memory)"));
}

}  // namespace

CollectiveCurveSet measure_collectives(int gpus, bool quick, const std::string& nccl_dir,
                                       std::ostream& log) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    throw InputError("calibrate --gpus: no CUDA device");
  if (gpus < 2 || gpus > count)
    throw InputError(fmt::format("calibrate --gpus {}: this machine has {} GPU{}", gpus, count,
                                 count == 1 ? "" : "s"));
  const nccl::Runtime& rt = nccl::Runtime::load(nccl_dir);
  if (!rt.available()) throw InputError("calibrate --gpus: " + rt.status());
  CuptiSession cupti;
  if (!cupti.ok())
    throw InputError("calibrate --gpus needs CUPTI for the kernel times: " + cupti.failure());
  std::vector<int64_t> sizes;
  for (int64_t s = 1 << 10; s <= (int64_t{1} << 30); s *= quick ? 16 : 4) sizes.push_back(s);
  CollectiveCurveSet set;
  set.gpus = gpus;
  set.topology = topology_text(gpus);
  set.nccl = rt.status();
  set.dtype = "bf16";
  Group g(gpus, sizes.back(), rt);
  for (Collective c : kCollectives) verify(g, c);
  log << fmt::format("{}: {}; every collective checked on known values\n", set.nccl, set.topology);
  for (Collective c : kCollectives) {
    auto& curve = set.curves[std::string(collective_name(c))];
    for (int64_t size : sizes) {
      int64_t bytes = collective_buffers(c, size, gpus, kElement).bytes;
      int reps = bytes >= (256 << 20) ? 10 : quick ? 10 : 20;
      for (int w = 0; w < 3; ++w) g.launch(c, bytes);
      g.synchronize();
      // The host call: launched, then waited for, one at a time.
      std::vector<double> wall;
      for (int i = 0; i < reps; ++i) {
        auto t0 = Clock::now();
        g.launch(c, bytes);
        g.synchronize();
        wall.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
      SampleTimes warm = time_kernels(g, cupti, c, bytes, reps, false);
      SampleTimes cold = time_kernels(g, cupti, c, bytes, reps, true);
      CollectivePoint p{bytes, summarize_samples(warm.kernel_s).median,
                        summarize_samples(wall).median, summarize_samples(cold.kernel_s).median};
      curve.push_back(p);
      log << fmt::format(
          "  {:<15} {:>11} B  kernel {:>9.1f} us  after an L2 flush {:>9.1f} us  call {:>9.1f} us  "
          "starts within {:.1f} us\n",
          collective_name(c), bytes, p.kernel_s * 1e6, p.kernel_cold_s * 1e6, p.wall_s * 1e6,
          summarize_samples(warm.skew_s).median * 1e6);
    }
  }
  return set;
}

}  // namespace rooflens::profiler

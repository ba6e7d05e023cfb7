// The module's side of the GPU module boundary (gpu_module.hpp): the one exported table. Every
// entry turns what it throws into a Status, so nothing unwinds into the binary.
#include <new>

#include "analyzer/core/errors.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/nccl_runtime.hpp"
#include "profiler/gpu/build_id.hpp"
#include "profiler/gpu/cupti_session.hpp"
#include "profiler/gpu/gpu_info.hpp"
#include "profiler/gpu/gpu_module.hpp"

namespace rooflens::gpu {

namespace {

template <class F>
void guarded(Status& status, F&& f) {
  try {
    f();
    status = {};
  } catch (const InputError& e) {
    status = {2, e.what()};
  } catch (const std::bad_alloc&) {
    status = {2, "out of memory"};
  } catch (const std::exception& e) {
    status = {1, e.what()};
  }
}

void device_name(std::string& name, Status& status) {
  guarded(status, [&] { name = profiler::query_gpu().name; });
}

void device_count(int& count, Status& status) {
  guarded(status, [&] {
    profiler::query_gpu();  // InputError naming why there is none
    kernels::cuda_check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  });
}

void nccl_unique_id(const std::string& nccl_dir, std::string& id, Status& status) {
  guarded(status, [&] {
    const kernels::nccl::Runtime& rt = kernels::nccl::Runtime::load(nccl_dir);
    if (!rt.available()) throw InputError(rt.status());
    ncclUniqueId u{};
    kernels::nccl::check(rt.api(), rt.api().get_unique_id(&u), "ncclGetUniqueId");
    id = kernels::nccl::unique_id_text(u);
  });
}

void calibrate(const profiler::CalibrateOptions& o, DeviceProfile& out, Status& status) {
  guarded(status, [&] { out = profiler::run_calibrate(o); });
}

void profile(const Analysis& a, const std::vector<replay::ReplayDecision>& plans,
             const profiler::ProfileOptions& o, ProfileMeasurements& out, profiler::Trace* trace,
             Status& status) {
  guarded(status, [&] { out = profiler::run_profile(a, plans, o, trace); });
}

const ModuleApi kApi{kModuleAbi,    ROOFLENS_BUILD_ID, &profiler::prepare_nvtx_injection,
                     &device_name,  &calibrate,        &profile,
                     &device_count, &nccl_unique_id};

}  // namespace

}  // namespace rooflens::gpu

extern "C" __attribute__((visibility("default"))) const rooflens::gpu::ModuleApi*
rooflens_gpu_module() {
  return &rooflens::gpu::kApi;
}

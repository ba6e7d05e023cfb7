#pragma once
// `rooflens calibrate --gpus N`: NCCL's collectives among this machine's first N GPUs, from
// 1 KiB to 1 GiB, each size timed twice: the kernels under CUPTI (per sample, the slowest
// rank's NCCL kernel time; samples launched back to back in batches, as a model's layers are)
// and the host call until every rank's stream has finished (one call at a time). One
// process drives every GPU (ncclCommInitAll, one stream each), as nccl-tests' -g mode does.
#include <ostream>
#include <string>

#include "analyzer/hw/collective_curves.hpp"

namespace rooflens::profiler {

// InputError when there are fewer than `gpus` GPUs, no NCCL or no CUPTI; CudaError when a
// collective's result is wrong (each is checked on known values before it is timed).
CollectiveCurveSet measure_collectives(int gpus, bool quick, const std::string& nccl_dir,
                                       std::ostream& log);

}  // namespace rooflens::profiler

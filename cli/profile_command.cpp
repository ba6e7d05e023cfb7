#include "cli/profile_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>

#include "analyzer/core/errors.hpp"
#include "analyzer/hw/derived_profile.hpp"
#include "analyzer/hw/link_model.hpp"
#include "analyzer/hw/perf_model.hpp"
#include "cli/tensor_parallel.hpp"
#include "cli/tuning_cache.hpp"
#include "profiler/gpu/gpu_module.hpp"
#include "profiler/measure/prediction_error.hpp"
#include "profiler/trace/trace_io.hpp"
#include "replay/plan.hpp"
#include "reports/atomic_file.hpp"
#include "reports/format.hpp"
#include "reports/result_json.hpp"
#include "reports/saved_result.hpp"
#include "reports/sink.hpp"
#include "reports/tensor_parallel_report.hpp"

namespace rooflens::cli {

void add_profile_options(CLI::App& cmd, ProfileArgs& a) {
  add_model_options(cmd, a.model);
  cmd.add_option("--l2", a.l2, "cold: flush L2 before each sample; hot: back to back")
      ->capture_default_str();
  cmd.add_option("--timing", a.timing, "cupti (kernel records) or events (CUDA events only)")
      ->capture_default_str();
  cmd.add_option("--trace", a.trace_path, "write the measured timeline as a Chrome/Perfetto trace");
  cmd.add_option("--record", a.record_path, "write the raw CUPTI records (tests/data format)");
  cmd.add_option("--min-samples", a.min_samples, "samples per layer at least")
      ->capture_default_str();
  cmd.add_option("--max-samples", a.max_samples, "samples per layer at most")
      ->capture_default_str();
  cmd.add_option("--layer-time-limit", a.layer_time_limit,
                 "seconds per layer before stopping short of 1% spread")
      ->capture_default_str();
  cmd.add_option("--tuning-cache", a.tuning_cache,
                 "JSON file of the kernel picked per problem: read when it exists (those run "
                 "untimed), written with this run's picks (keep the picks of a CUPTI-timed run "
                 "for a replay under Nsight Compute)");
  cmd.add_option("--nccl", a.nccl_dir,
                 "directory with libnccl.so.2, for --tp N on N GPUs (else $ROOFLENS_NCCL, the "
                 "loader's path, Python's nvidia/nccl/lib)");
  cmd.add_option("--cudnn", a.cudnn_dir,
                 "directory with libcudnn.so.9 (else $ROOFLENS_CUDNN, the loader's path, Python's "
                 "nvidia/cudnn/lib)");
}

namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) {
  g_interrupted.store(true);
}

// A module entry's Status as the CLI's exceptions: 2 is bad input or missing hardware.
void raise(const gpu::Status& st) {
  if (st.code == 0) return;
  if (st.code == 2) throw InputError(st.message);
  throw std::runtime_error(st.message);
}

// The module, loaded, with a GPU to run on: one line and exit 2 otherwise.
const gpu::ModuleApi& gpu_with_device() {
  const gpu::ModuleApi& gpu = gpu::load_gpu_module();
  std::string name;
  gpu::Status st;
  gpu.device_name(name, st);
  raise(st);
  gpu.prepare_nvtx_injection();  // before the first NVTX call
  return gpu;
}

DeviceProfile calibrate_here(const gpu::ModuleApi& gpu, const profiler::CalibrateOptions& o) {
  DeviceProfile p;
  gpu::Status st;
  gpu.calibrate(o, p, st);
  raise(st);
  return p;
}
// A rank process's part: its result and records where the launcher reads them.
int write_rank_files(const RankEnvironment& rank, const Analysis& analysis,
                     const profiler::Trace* trace) {
  std::string stem = fmt::format("{}/rank{}", rank.dir, rank.rank);
  reports::write_atomically(stem + ".json", [&](std::ostream& out) {
    reports::write_json(out, reports::result_json(analysis));
  });
  if (trace)
    reports::write_atomically(stem + ".record",
                              [&](std::ostream& out) { profiler::write_trace(out, *trace); });
  if (!analysis.profile->complete) return 130;
  return analysis.profile->valid ? 0 : 3;
}

// One process per GPU of a --tp or --ep plan.
int64_t model_gpus(const ModelArgs& m) {
  return m.tp * m.ep;
}

// The launcher of profile --tp N (or --ep N): the ranks' results merged into one, written as one
// profile's.
int run_tensor_parallel(const ProfileArgs& a, const gpu::ModuleApi& gpu) {
  if (!a.record_path.empty())
    throw InputError("--record with --tp: --trace writes every GPU's timeline");
  std::string id;
  gpu::Status st;
  gpu.nccl_unique_id(a.nccl_dir, id, st);
  raise(st);
  std::string dir = make_rank_directory();
  const int ranks = static_cast<int>(model_gpus(a.model));
  int code = run_ranks(ranks, id, dir);
  profiler::remove_rank_barrier_name(id);  // gone already unless rank 0 died early
  if (code != 0 && code != 3)
    return code;  // the failed rank's log is on stderr; the directory stays for a look
  std::vector<nlohmann::json> results;
  std::vector<profiler::Trace> traces;
  for (int r = 0; r < ranks; ++r) {
    results.push_back(reports::read_result(fmt::format("{}/rank{}.json", dir, r)).json);
    if (!a.trace_path.empty())
      traces.push_back(profiler::read_trace(fmt::format("{}/rank{}.record", dir, r)));
  }
  nlohmann::json merged = reports::merge_rank_results(results);
  reports::OutputSet outputs;
  outputs.add("--trace", a.trace_path,
              [&](std::ostream& out) { reports::write_chrome_trace(out, merged, traces); });
  write_outputs(a.model, merged, std::move(outputs));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return code;
}

}  // namespace

namespace {

// Predictions use the roofs of the GPU that runs them: the given profile; else the one rooflens
// ships or derives for this GPU (as analyze does); else a quick calibration.
std::shared_ptr<const Device> profile_device(const gpu::ModuleApi& gpu, const ProfileArgs& a) {
  std::shared_ptr<const Device> device;
  std::string gpu_name;
  gpu::Status name_status;
  gpu.device_name(gpu_name, name_status);
  std::optional<Device> known =
      name_status.code == 0 ? device_for_gpu_name(gpu_name, 0) : std::nullopt;
  std::optional<DeviceProfile> ready =
      known && a.model.device_profile.empty() ? default_profile(known->id) : std::nullopt;
  if (!a.model.device_profile.empty()) {
    device = std::make_shared<const Device>(
        calibrated_device(read_device_profile(a.model.device_profile)));
  } else if (ready) {
    device = std::make_shared<const Device>(calibrated_device(*ready));
    std::cerr << fmt::format(
        "rooflens: predicting with the {} ({}); --device-profile FILE for another\n",
        ready->derived_from.empty() ? "measured profile " + ready->source
                                    : "profile derived for " + known->id,
        gpu_name);
  } else {
    std::cerr << "rooflens: calibrating this GPU's roofs (quick; `rooflens calibrate` also "
                 "measures the tables predictions use)\n";
    profiler::CalibrateOptions co;
    co.quick = true;
    co.tables = false;
    device = std::make_shared<const Device>(calibrated_device(calibrate_here(gpu, co)));
  }
  return device;
}

profiler::ProfileOptions profile_options(const ProfileArgs& a) {
  profiler::ProfileOptions o;
  o.cold_l2 = a.l2 == "cold";
  o.force_events = a.timing == "events";
  o.min_samples = a.min_samples;
  o.max_samples = a.max_samples;
  o.layer_time_limit_s = a.layer_time_limit;
  o.interrupted = &g_interrupted;
  o.cudnn_dir = a.cudnn_dir;
  o.nccl_dir = a.nccl_dir;
  return o;
}

}  // namespace

int run_profile_command(const ProfileArgs& a, const CLI::App& cmd) {
  if (a.l2 != "cold" && a.l2 != "hot")
    throw InputError(fmt::format("--l2 {}: expected cold or hot", a.l2));
  if (a.timing != "cupti" && a.timing != "events")
    throw InputError(fmt::format("--timing {}: expected cupti or events", a.timing));
  if (a.min_samples < 1 || a.max_samples < a.min_samples)
    throw InputError("--min-samples must be >= 1 and <= --max-samples");
  const gpu::ModuleApi& gpu = gpu_with_device();
  std::shared_ptr<const Device> device = profile_device(gpu, a);
  Graph inferred;
  Analysis analysis = build_analysis(a.model, cmd, &inferred, device);
  profiler::ProfileOptions o = profile_options(a);
  std::optional<RankEnvironment> rank = rank_environment();
  const int64_t ranks = model_gpus(a.model);
  if (!rank && ranks > 1) {
    int count = 0;
    gpu::Status st;
    gpu.device_count(count, st);
    raise(st);
    if (count >= ranks) return run_tensor_parallel(a, gpu);
    std::cerr << fmt::format(
        "rooflens: {} {}: this machine has {} GPU{}; replaying one GPU's shard, its collectives "
        "not measured\n",
        a.model.tp > 1 ? "--tp" : "--ep", ranks, count, count == 1 ? "" : "s");
  }
  if (rank) {
    o.rank = rank->rank;
    o.ranks = rank->ranks;
    o.nccl_id = rank->nccl_id;
  }
  replay::KernelChoices tuned;
  std::string gpu_name;
  gpu::Status st_name;
  if (!a.tuning_cache.empty()) {
    gpu.device_name(gpu_name, st_name);
    raise(st_name);
    tuned = read_tuning_cache(a.tuning_cache, gpu_name);
    o.tuning_cache = &tuned;
  }
  auto previous = std::signal(SIGINT, on_sigint);
  profiler::Trace trace;
  bool want_trace = !a.trace_path.empty() || !a.record_path.empty();
  gpu::Status st;
  std::vector<replay::ReplayDecision> plans =
      replay::plan_replay(analysis, inferred, forced_precision(a.model), o.ranks);
  ProfileMeasurements measured;
  gpu.profile(analysis, plans, o, measured, want_trace ? &trace : nullptr, st);
  std::signal(SIGINT, previous);
  raise(st);
  // After the run's own outputs, so that a cache that cannot be written loses no measurement;
  // the ranks' shards tune alike, and rank 0 writes for them.
  auto keep_picks = [&] {
    if (!a.tuning_cache.empty() && (!rank || rank->rank == 0))
      write_tuning_cache(a.tuning_cache, gpu_name, tuned);
  };
  analysis = profiler::with_measurements(std::move(analysis), std::move(measured));
  if (rank) {
    int code = write_rank_files(*rank, analysis, want_trace ? &trace : nullptr);
    keep_picks();
    return code;
  }
  reports::OutputSet outputs;
  outputs.add("--record", a.record_path,
              [&](std::ostream& out) { profiler::write_trace(out, trace); });
  outputs.add("--trace", a.trace_path,
              [&](std::ostream& out) { reports::write_chrome_trace(out, analysis, trace); });
  write_outputs(a.model, analysis, std::move(outputs));
  keep_picks();
  if (!analysis.profile->complete) {
    std::cerr << "rooflens: interrupted; the outputs are marked incomplete\n";
    return 130;
  }
  return analysis.profile->valid ? 0 : 3;
}

namespace {

// Each collective at a few sizes: NCCL's kernel time back to back and after an L2 flush (what a
// model's collective meets), its bus bandwidth and the host call here, beside what rooflens
// priced before this calibration (the curves it ships for this GPU, else published bandwidths).
void print_collectives(std::ostream& say, const DeviceProfile& p) {
  Device published = find_device(p.base_device);
  for (const CollectiveCurveSet& set : p.collectives) {
    say << fmt::format("collectives over {} GPUs:\n  {}\n  {}\n", set.gpus, set.topology, set.nccl);
    say << fmt::format("  {:<15} {:>8} {:>11} {:>12} {:>9} {:>11} {:>13}\n", "", "size", "kernel",
                       "L2 flushed", "bus GB/s", "host call", "priced before");
    for (Collective c : kCollectives) {
      auto it = set.curves.find(std::string(collective_name(c)));
      if (it == set.curves.end()) continue;
      for (const CollectivePoint& pt : it->second) {
        if (pt.bytes != (1 << 20) && pt.bytes != (64 << 20) && pt.bytes != (1 << 30) &&
            pt.bytes != it->second.front().bytes)
          continue;
        CollectivePrice model = price_collective(c, pt.bytes, set.gpus, published);
        say << fmt::format(
            "  {:<15} {:>8} {:>8.1f} us {:>9.1f} us {:>9.0f} {:>8.1f} us {:>10.1f} us\n",
            collective_name(c), reports::human_bytes(static_cast<double>(pt.bytes)),
            pt.kernel_s * 1e6, pt.kernel_cold_s * 1e6,
            pt.bytes / pt.kernel_s * bus_factor(c, set.gpus) / 1e9, pt.wall_s * 1e6,
            model.seconds * 1e6);
      }
    }
  }
}

}  // namespace

namespace {

void check_calibrate_args(const CalibrateArgs& a) {
  if (a.gpus < 1) throw InputError(fmt::format("--gpus {}: must be at least 1", a.gpus));
  if (!a.add_to.empty() && a.gpus < 2 && a.tables.empty())
    throw InputError(
        "--add-to adds measured collectives (--gpus N, N >= 2) or performance tables (--tables "
        "NAMES): give one");
  if (!a.tables.empty() && a.roofs_only)
    throw InputError("--tables with --roofs-only: --tables measures tables");
  if (!a.tables.empty())
    selected_grids(a.quick, a.tables);  // a misspelled table fails before any GPU time
}

// --add-to default: the profile predictions use on this GPU when none is given: shipped, else
// derived.
DeviceProfile default_profile_here(const gpu::ModuleApi& gpu) {
  std::string name;
  gpu::Status st;
  gpu.device_name(name, st);
  raise(st);
  std::optional<Device> known = device_for_gpu_name(name, 0);
  if (!known)
    throw InputError(fmt::format("--add-to default: GPU '{}' is not in the device database", name));
  std::optional<DeviceProfile> base = default_profile(known->id);
  if (!base)
    throw InputError(
        fmt::format("--add-to default: rooflens has no profile for {} to add to", known->id));
  return *base;
}

// --add-to: this run's collectives and tables into `base`, written to --out.
void add_to_profile(const CalibrateArgs& a, DeviceProfile& base, DeviceProfile& p,
                    std::ostream& say) {
  if (base.base_device != p.base_device)
    throw InputError(fmt::format("--add-to {}: a profile of {}, this GPU is {}", a.add_to,
                                 base.base_device, p.base_device));
  std::vector<std::string> added;
  if (a.gpus >= 2) {
    std::erase_if(base.collectives, [&](const CollectiveCurveSet& s) { return s.gpus == a.gpus; });
    base.collectives.push_back(p.collectives.front());
    std::sort(
        base.collectives.begin(), base.collectives.end(),
        [](const CollectiveCurveSet& x, const CollectiveCurveSet& y) { return x.gpus < y.gpus; });
    print_collectives(say, p);
    added.push_back(fmt::format("the collectives over {} GPUs", a.gpus));
  }
  // Each measured table replaces the profile's of that name, with its held-out check (or none).
  for (auto& [key, table] : p.tables.tables) {
    base.tables.tables[key] = table;
    base.tables.validation.erase(key);
    if (auto v = p.tables.validation.find(key); v != p.tables.validation.end())
      base.tables.validation[key] = v->second;
    base.method["table " + key] = p.method["tables"];
  }
  if (!p.tables.tables.empty())
    added.push_back(fmt::format("{} tables measured here", p.tables.tables.size()));
  reports::write_atomically(a.out, [&](std::ostream& out) { out << device_profile_json(base); });
  // Say where the result went when it is not the file added to, which stays as it was.
  bool in_place =
      a.add_to == "default" || std::filesystem::path(a.out) == std::filesystem::path(a.add_to);
  say << fmt::format(
      "wrote {} ({} with {}){}\n", a.out, a.add_to, fmt::join(added, " and "),
      in_place ? "" : fmt::format("; {} itself is unchanged (--out names the file)", a.add_to));
}

// The measured roofs beside the spec sheet's.
void print_roofs(std::ostream& say, const DeviceProfile& p) {
  Device spec = find_device(p.base_device);
  say << fmt::format("{} ({}), SM clock {:.0f} MHz\n", p.gpu, p.base_device, p.sm_clock_mhz);
  auto line = [&say](const char* what, double measured, double spec_value, const char* unit,
                     double scale) {
    say << fmt::format("  {:<22} {:>10.1f} {:<7} spec {:>10.1f}  ({:.0f}% of spec)\n", what,
                       measured / scale, unit, spec_value / scale,
                       spec_value > 0 ? 100 * measured / spec_value : 0);
  };
  line("HBM bandwidth", p.hbm_bandwidth, spec.hbm_bandwidth, "GB/s", 1e9);
  say << fmt::format("  {:<22} {:>10.1f} GB/s\n", "L2 bandwidth", p.l2_bandwidth / 1e9);
  for (const auto& [k, v] : p.tensor_flops) {
    auto it = spec.tensor_flops.find(k);
    line(fmt::format("tensor {}", k).c_str(), v, it == spec.tensor_flops.end() ? 0 : it->second,
         "TFLOP/s", 1e12);
  }
  for (const auto& [k, v] : p.cuda_core_flops) {
    auto it = spec.cuda_core_flops.find(k);
    line(fmt::format("CUDA cores {}", k).c_str(), v,
         it == spec.cuda_core_flops.end() ? 0 : it->second, "TFLOP/s", 1e12);
  }
  say << fmt::format("  {:<22} {:>10.2f} us    (back-to-back launch every {:.2f} us)\n",
                     "shortest kernel", p.launch_floor_s * 1e6, p.launch_interval_s * 1e6);
  if (p.gemm_floor_s > 0)
    say << fmt::format("  {:<22} {:>10.2f} us\n", "shortest tiled GEMM", p.gemm_floor_s * 1e6);
  print_collectives(say, p);
}

}  // namespace

void add_calibrate_options(CLI::App& calibrate, CalibrateArgs& cargs) {
  calibrate.add_option("--out", cargs.out, "device profile JSON to write")->capture_default_str();
  calibrate.add_flag("--quick", cargs.quick,
                     "fewer sizes and smaller tables, every class (about 2 minutes)");
  calibrate.add_flag("--roofs-only", cargs.roofs_only,
                     "roofs and floors only, no performance tables");
  calibrate.add_option("--cudnn", cargs.cudnn_dir,
                       "directory with libcudnn.so.9 (else the usual places)");
  calibrate
      .add_option("--gpus", cargs.gpus,
                  "also NCCL's collectives among the first N GPUs, 1 KiB to 1 GiB")
      ->capture_default_str();
  calibrate.add_option("--add-to", cargs.add_to,
                       "add what --gpus N or --tables measures to FILE (default: in use)");
  calibrate
      .add_option("--tables", cargs.tables,
                  "only these tables (prefixes, comma-separated: conv.bf16.dw,mem.reduce)")
      ->delimiter(',');
  calibrate.add_option("--nccl", cargs.nccl_dir,
                       "directory with libnccl.so.2 (else the usual places)");
}

int run_calibrate_command(const CalibrateArgs& a) {
  check_calibrate_args(a);
  std::optional<DeviceProfile> base;
  if (!a.add_to.empty() && a.add_to != "default")
    base = read_device_profile(a.add_to);  // a bad file fails before any GPU time
  const gpu::ModuleApi& gpu = gpu_with_device();
  if (a.add_to == "default") base = default_profile_here(gpu);
  profiler::CalibrateOptions co;
  co.quick = a.quick;
  co.tables = !a.roofs_only;
  co.cudnn_dir = a.cudnn_dir;
  co.gpus = a.gpus;
  co.nccl_dir = a.nccl_dir;
  co.only_tables = a.tables;
  co.collectives_only = base && a.tables.empty();
  if (base && !a.tables.empty())
    co.roofs = calibrated_device(*base);  // the profile's roofs budget the points
  DeviceProfile p = calibrate_here(gpu, co);
  std::ostream& say =
      reports::is_stdout(a.out) ? std::cerr : std::cout;  // --out -: stdout holds the JSON alone
  if (base) {
    add_to_profile(a, *base, p, say);
    return 0;
  }
  reports::write_atomically(a.out, [&](std::ostream& out) { out << device_profile_json(p); });
  print_roofs(say, p);
  say << fmt::format("wrote {}\n", a.out);
  return 0;
}

}  // namespace rooflens::cli

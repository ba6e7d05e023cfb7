#include "kernels/runner.hpp"

#include <fmt/format.h>

#include <limits>

namespace rooflens::kernels {

std::string ReplayLabel::text() const {
  std::string t = library;
  if (!detail.empty()) t += ": " + detail;
  if (!note.empty()) t += " (" + note + ")";
  return t;
}

Runner pick_fastest(std::vector<Runner> candidates, const ReplayContext& ctx, const std::string& key, cudaStream_t s) {
  if (candidates.empty()) throw ReplayUnsupported("no kernel takes this layer");
  size_t n = candidates.size();
  if (n == 1 || !ctx.time) return std::move(candidates.front());
  if (ctx.choices) {
    auto it = ctx.choices->find(key);
    if (it != ctx.choices->end() && it->second < static_cast<int>(n)) {
      Runner r = std::move(candidates[static_cast<size_t>(it->second)]);
      r.label().note = fmt::format("fastest of {}, tuned on an identical layer", n);
      return r;
    }
  }
  double best = std::numeric_limits<double>::infinity();
  size_t best_i = n;
  std::string first_error;
  for (size_t i = 0; i < n; ++i) {
    try {
      double t = ctx.time([&](cudaStream_t st) { candidates[i].launch(st); });
      if (t < best) best = t, best_i = i;
    } catch (const CudaError& e) {
      cudaGetLastError();  // a failed launch configuration is not sticky; go on with the others
      cudaStreamSynchronize(s);
      if (first_error.empty()) first_error = fmt::format("{}: {}", candidates[i].label().text(), e.what());
    }
  }
  if (best_i == n) throw ReplayUnsupported(fmt::format("no candidate kernel ran: {}", first_error));
  if (ctx.choices) (*ctx.choices)[key] = static_cast<int>(best_i);
  Runner r = std::move(candidates[best_i]);
  r.label().note = fmt::format("fastest of {} timed", n);
  return r;
}

}  // namespace rooflens::kernels

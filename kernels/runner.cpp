#include "kernels/runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace rooflens::kernels {

std::string ReplayLabel::text() const {
  std::string t = library;
  if (!detail.empty()) t += ": " + detail;
  if (!note.empty()) t += " (" + note + ")";
  return t;
}

std::string ReplayLabel::kernel() const {
  return detail.empty() ? library : library + ": " + detail;
}

Runner pick_fastest(std::vector<Runner> candidates, const ReplayContext& ctx,
                    const std::string& key, cudaStream_t s) {
  if (candidates.empty()) throw ReplayUnsupported("no kernel takes this layer");
  size_t n = candidates.size();
  if (n == 1 || !ctx.time) return std::move(candidates.front());
  if (ctx.choices) {
    auto it = ctx.choices->find(key);
    if (it != ctx.choices->end()) {
      const replay::KernelChoice& c = it->second;
      // The index, if that candidate is still the same kernel; else the first with its name (a
      // cache from another library version may order them differently).
      size_t at = n;
      if (c.index >= 0 && static_cast<size_t>(c.index) < n &&
          candidates[static_cast<size_t>(c.index)].label().kernel() == c.kernel)
        at = static_cast<size_t>(c.index);
      for (size_t i = 0; at == n && i < n; ++i)
        if (candidates[i].label().kernel() == c.kernel) at = i;
      if (at < n) {
        Runner r = std::move(candidates[at]);
        r.label().note = c.from_file ? fmt::format("fastest of {} in the tuning cache", n)
                                     : fmt::format("fastest of {}, tuned on an identical layer", n);
        return r;
      }
    }
  }
  std::string first_error;
  // Seconds per candidate; infinity when it failed to run.
  auto time_one = [&](size_t i) {
    try {
      return ctx.time([&](cudaStream_t st) { candidates[i].launch(st); });
    } catch (const CudaError& e) {
      cudaGetLastError();  // a failed launch configuration is not sticky; go on with the others
      cudaStreamSynchronize(s);
      if (first_error.empty())
        first_error = fmt::format("{}: {}", candidates[i].label().text(), e.what());
      return std::numeric_limits<double>::infinity();
    }
  };
  std::vector<std::pair<double, size_t>> round1;
  for (size_t i = 0; i < n; ++i) round1.emplace_back(time_one(i), i);
  std::sort(round1.begin(), round1.end());
  if (!std::isfinite(round1.front().first))
    throw ReplayUnsupported(fmt::format("no candidate kernel ran: {}", first_error));
  // The few best timed again: a short median can flatter a kernel with a slow mode.
  std::vector<std::pair<double, size_t>> round2;
  for (size_t r = 0; r < std::min<size_t>(3, round1.size()) && std::isfinite(round1[r].first); ++r)
    round2.emplace_back(time_one(round1[r].second), round1[r].second);
  std::sort(round2.begin(), round2.end());
  size_t best_i = round2.front().second;
  if (ctx.choices)
    (*ctx.choices)[key] = {static_cast<int>(best_i), static_cast<int>(n),
                           candidates[best_i].label().kernel(), false};
  // The runner-up says how close the choice was (and what the other library reached).
  std::string runner_up;
  if (round2.size() > 1 && std::isfinite(round2[1].first))
    runner_up = fmt::format("; next {} at {:.1f} us vs {:.1f}",
                            candidates[round2[1].second].label().library, round2[1].first * 1e6,
                            round2.front().first * 1e6);
  Runner r = std::move(candidates[best_i]);
  r.label().note = fmt::format("fastest of {} timed{}", n, runner_up);
  return r;
}

}  // namespace rooflens::kernels

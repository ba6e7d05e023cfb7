#pragma once
// `profile --tp N`: the ranks' results as one. Rank 0's result is the result (every rank ran the
// same shard of every layer); each node gains its median on every GPU, and the result a
// "tensor_parallel" section saying how far the GPUs differ (they should not: same work, same
// kind of GPU), which the terminal report prints under the profile.
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

namespace rooflens::reports {

// InputError when the ranks' results are not of one model (node lists differ).
nlohmann::json merge_rank_results(const std::vector<nlohmann::json>& ranks);
void write_tensor_parallel_section(std::ostream& out, const nlohmann::json& result, size_t width);

}  // namespace rooflens::reports

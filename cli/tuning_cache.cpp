#include "cli/tuning_cache.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "analyzer/core/errors.hpp"
#include "reports/atomic_file.hpp"
#include "reports/saved_result.hpp"

namespace rooflens::cli {

namespace {
constexpr const char* kFormat = "rooflens tuning cache 1";
using nlohmann::json;
}  // namespace

replay::KernelChoices read_tuning_cache(const std::string& path, const std::string& gpu) {
  replay::KernelChoices out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return out;
  json j = reports::read_json_file(path, "--tuning-cache " + path);
  auto bad = [&](const std::string& why) {
    return InputError(fmt::format("--tuning-cache {}: {}", path, why));
  };
  if (!j.is_object() || j.value("format", "") != kFormat)
    throw bad(fmt::format("not a tuning cache (no \"format\": \"{}\")", kFormat));
  if (!j.contains("gpu") || !j["gpu"].is_string() || !j.contains("choices") ||
      !j["choices"].is_object())
    throw bad("a tuning cache needs \"gpu\" (a string) and \"choices\" (an object)");
  if (j["gpu"].get<std::string>() != gpu)
    throw bad(fmt::format("tuned on {}, and this GPU is {}: name another file",
                          j["gpu"].get<std::string>(), gpu));
  for (const auto& [key, c] : j["choices"].items()) {
    bool ok = c.is_object() && c.contains("candidate") && c["candidate"].is_number_integer() &&
              c.contains("of") && c["of"].is_number_integer() && c.contains("kernel") &&
              c["kernel"].is_string() && !c["kernel"].get<std::string>().empty();
    if (!ok || c["candidate"].get<int64_t>() < 0 ||
        c["candidate"].get<int64_t>() >= c["of"].get<int64_t>() || c["of"].get<int64_t>() > 100000)
      throw bad(fmt::format(
          "choice \"{}\" needs \"candidate\" (0 <= candidate < of), \"of\" and \"kernel\"", key));
    out[key] = {c["candidate"].get<int>(), c["of"].get<int>(), c["kernel"].get<std::string>(),
                true};
  }
  return out;
}

void write_tuning_cache(const std::string& path, const std::string& gpu,
                        const replay::KernelChoices& choices) {
  json j = {{"format", kFormat}, {"gpu", gpu}, {"choices", json::object()}};
  for (const auto& [key, c] : choices)
    j["choices"][key] = {{"candidate", c.index}, {"of", c.candidates}, {"kernel", c.kernel}};
  reports::write_atomically(path, [&](std::ostream& out) { out << j.dump(1) << "\n"; });
}

}  // namespace rooflens::cli

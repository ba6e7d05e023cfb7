#include "reports/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "analyzer/core/errors.hpp"

namespace rooflens::reports {

void write_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(fmt::format("{}: directory {} does not exist", path, dir.string()));
  if (fs::is_directory(target, ec)) throw InputError(fmt::format("{}: is a directory", path));
  fs::path tmp = dir / fmt::format(".{}.tmp.{}", target.filename().string(), ::getpid());
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw InputError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
      write(out);
      out.flush();
      if (!out) throw InputError(fmt::format("{}: write failed: {}", path, std::strerror(errno)));
    }
    fs::rename(tmp, target, ec);
    if (ec) throw InputError(fmt::format("{}: cannot rename into place: {}", path, ec.message()));
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
}

}  // namespace rooflens::reports

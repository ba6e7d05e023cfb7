#include "reports/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "analyzer/core/errors.hpp"

namespace rooflens::reports {

void write_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  if (is_stdout(path)) {
    std::ostringstream whole;
    write(whole);
    std::cout << whole.str();
    std::cout.flush();
    if (!std::cout)
      throw InputError(fmt::format("standard output: write failed: {}", std::strerror(errno)));
    return;
  }
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError(fmt::format("{}: directory {} does not exist", path, dir.string()));
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

void OutputSet::add(const std::string& flag, const std::string& path, Writer write) {
  if (path.empty()) return;
  if (is_stdout(path)) {
    if (takes_stdout())
      throw InputError(fmt::format("{} - and {} -: only one output can go to standard output",
                                   stdout_flag_, flag));
    stdout_flag_ = flag;
  }
  outputs_.push_back({path, std::move(write)});
}

void OutputSet::write_all() const {
  for (const Output& o : outputs_)
    if (!is_stdout(o.path)) write_atomically(o.path, o.write);
  for (const Output& o : outputs_)
    if (is_stdout(o.path)) write_atomically(o.path, o.write);
}

}  // namespace rooflens::reports

#include "cli/record_command.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "analyzer/core/errors.hpp"
#include "profiler/trace/compressed_text.hpp"
#include "profiler/trace/record_parts.hpp"
#include "profiler/trace/trace_io.hpp"
#include "reports/atomic_file.hpp"
#include "reports/format.hpp"

namespace rooflens::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLibraryName = "librooflens_record.so";
volatile sig_atomic_t g_child = 0;

extern "C" void forward_to_child(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

// $ROOFLENS_RECORD_LIBRARY, else beside the binary, else ../lib from it (the install layout).
fs::path find_injection_library() {
  std::error_code ec;
  if (const char* env = std::getenv("ROOFLENS_RECORD_LIBRARY"); env && *env) {
    if (!fs::exists(env, ec))
      throw InputError(fmt::format("ROOFLENS_RECORD_LIBRARY={}: no such file", env));
    return fs::absolute(env);
  }
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  fs::path dir = ec ? fs::current_path() : exe.parent_path();
  for (const fs::path& p : {dir / kLibraryName, dir.parent_path() / "lib" / kLibraryName})
    if (fs::exists(p, ec)) return p;
  throw InputError(
      fmt::format("no {} beside the binary or in ../lib: this rooflens was built without CUDA "
                  "(record needs the "
                  "CUDA toolkit at build time), or ROOFLENS_RECORD_LIBRARY names it",
                  kLibraryName));
}

// Another profiler already injected into this environment owns CUPTI: say so before running.
void refuse_if_cupti_taken(const fs::path& ours) {
  for (const char* var : {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"}) {
    const char* v = std::getenv(var);
    if (v && *v && fs::path(v) != ours)
      throw InputError(fmt::format(
          "CUPTI is taken: {}={} is already set (nsys or ncu runs this command?); run rooflens "
          "record outside the other profiler",
          var, v));
  }
}

struct ChildEnd {
  int exit_code = 0;
  std::string how;  // "" on exit 0
};

// fork + exec with the injection set; the parent ignores the terminal's SIGINT (the program gets
// it too and flushes) and passes SIGTERM and SIGHUP on.
ChildEnd run_child(const std::vector<std::string>& command, const fs::path& library,
                   const std::string& dir) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    close(report[0]);
    setenv("CUDA_INJECTION64_PATH", library.c_str(), 1);
    setenv("NVTX_INJECTION64_PATH", library.c_str(), 1);
    setenv(profiler::kRecordDirEnv, dir.c_str(), 1);
    execvp(argv[0], argv.data());
    int e = errno;
    ssize_t ignored = write(report[1], &e, sizeof e);
    (void)ignored;
    _exit(127);
  }
  close(report[1]);
  g_child = pid;
  struct sigaction forward {
  }, ignore{}, old_term{}, old_hup{}, old_int{}, old_quit{};
  forward.sa_handler = forward_to_child;
  sigemptyset(&forward.sa_mask);
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGTERM, &forward, &old_term);
  sigaction(SIGHUP, &forward, &old_hup);
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(report[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (got == static_cast<ssize_t>(sizeof exec_errno))
    throw InputError(fmt::format("cannot run '{}': {}", command[0], std::strerror(exec_errno)));
  ChildEnd end;
  if (WIFEXITED(status)) {
    end.exit_code = WEXITSTATUS(status);
    if (end.exit_code != 0) end.how = fmt::format("the program exited with code {}", end.exit_code);
  } else if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    end.exit_code = 128 + sig;
    const char* name = sigabbrev_np(sig);
    end.how = fmt::format("the program was killed by signal {} (SIG{})", sig, name ? name : "?");
  }
  return end;
}

// The folder the parts go to, removed with what is in it whatever happens.
struct PartsDir {
  std::string path;
  PartsDir() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    std::string pattern = ((ec ? fs::path("/tmp") : base) / "rooflens-record-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw std::runtime_error(fmt::format("mkdtemp {}: {}", pattern, std::strerror(errno)));
    path = pattern;
  }
  ~PartsDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

int count_kind(const profiler::Trace& t, profiler::GpuActivity::Kind k) {
  int n = 0;
  for (const auto& a : t.activities) n += a.kind == k;
  return n;
}

}  // namespace

void add_record_options(CLI::App& cmd, RecordArgs& a) {
  cmd.add_option("--out", a.out, "trace file to write (gzip when it ends in .gz)")
      ->capture_default_str();
  cmd.add_option("command", a.command, "the program and its arguments, after --")->required();
}

int run_record_command(const RecordArgs& a) {
  fs::path library = find_injection_library();
  refuse_if_cupti_taken(library);
  PartsDir dir;
  ChildEnd end = run_child(a.command, library, dir.path);
  profiler::RecordedParts parts = profiler::merge_record_parts(dir.path);
  profiler::Trace& t = parts.trace;
  t.command = a.command;
  t.exit_code = end.exit_code;
  std::vector<std::string> incomplete;
  if (!end.how.empty()) incomplete.push_back(end.how);
  if (!parts.unflushed.empty())
    incomplete.push_back(fmt::format(
        "{} process(es) ended without flushing ({}): their last second of records may be missing",
        parts.unflushed.size(), parts.unflushed.front()));
  if (t.dropped > 0) incomplete.push_back(fmt::format("CUPTI dropped {} records", t.dropped));
  if (!parts.unavailable.empty())
    incomplete.push_back(fmt::format("CUPTI unavailable in {} process(es): nothing recorded there",
                                     parts.unavailable.size()));
  if (parts.unreadable_lines > 0)
    incomplete.push_back(fmt::format("{} part line(s) cut short", parts.unreadable_lines));
  t.complete = incomplete.empty();
  for (size_t i = 0; i < incomplete.size(); ++i)
    t.incomplete_reason += (i ? "; " : "") + incomplete[i];
  if (parts.processes == 0)
    t.notes.push_back(
        "no process initialized CUDA under the injection library: nothing ran on the GPU, or a "
        "profiler the "
        "program runs under replaced CUDA_INJECTION64_PATH");
  for (const auto& u : parts.unavailable) t.notes.push_back("CUPTI unavailable in " + u);
  reports::write_atomically(
      a.out, [&](std::ostream& o) { profiler::write_trace(o, t, profiler::gz_name(a.out)); });

  if (!parts.unavailable.empty()) {
    std::cerr << "rooflens: CUPTI unavailable in " << parts.unavailable.front() << '\n';
    return end.exit_code != 0 ? end.exit_code : 2;
  }
  int ranges = static_cast<int>(t.ranges.size());
  std::cerr << fmt::format(
      "rooflens record: {} kernels, {} memcpys, {} memsets, {} NVTX ranges, {} launch calls from "
      "{} process(es){}; wrote {}\n",
      reports::with_commas(count_kind(t, profiler::GpuActivity::Kind::kernel)),
      reports::with_commas(count_kind(t, profiler::GpuActivity::Kind::memcpy)),
      reports::with_commas(count_kind(t, profiler::GpuActivity::Kind::memset)),
      reports::with_commas(ranges), reports::with_commas(static_cast<int64_t>(t.api_calls.size())),
      parts.processes, t.gpu.empty() ? "" : " on " + t.gpu, a.out);
  if (!t.complete) std::cerr << "rooflens record: INCOMPLETE: " << t.incomplete_reason << '\n';
  return end.exit_code;
}

}  // namespace rooflens::cli

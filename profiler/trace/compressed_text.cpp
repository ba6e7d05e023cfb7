#include "profiler/trace/compressed_text.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "analyzer/core/errors.hpp"

extern char** environ;

namespace rooflens::profiler {

namespace {

struct FilterResult {
  int status = -1;  // exit code; -1 when it could not run or was killed
  std::string output;
};

// Runs argv[0] (found on PATH) with `input` on its stdin and returns its stdout; both pipes are
// served together so neither side blocks on a full pipe.
FilterResult pipe_through(const std::vector<std::string>& args, const std::string& input) {
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(in_pipe[0]);
    close(in_pipe[1]);
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY,
                                   0);  // its complaint becomes our one line
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  FilterResult r;
  if (rc != 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    throw std::runtime_error(fmt::format("cannot run {}: {}", args[0], std::strerror(rc)));
  }
  // A reader that quits early must not kill us with SIGPIPE.
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &previous);
  size_t written = 0;
  int in_fd = in_pipe[1];
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  char buffer[1 << 16];
  bool out_open = true;
  while (out_open) {
    pollfd fds[2];
    int n = 0;
    fds[n++] = {out_pipe[0], POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t got = read(out_pipe[0], buffer, sizeof buffer);
      if (got > 0)
        r.output.append(buffer, static_cast<size_t>(got));
      else if (got == 0 || errno != EINTR)
        out_open = false;
    }
    if (n > 1 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t put =
          write(in_fd, input.data() + written, std::min<size_t>(input.size() - written, 1 << 16));
      if (put > 0) written += static_cast<size_t>(put);
      if ((put < 0 && errno != EINTR && errno != EAGAIN) || written == input.size()) {
        close(in_fd);
        in_fd = -1;
      }
    }
  }
  if (in_fd >= 0) close(in_fd);
  close(out_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGPIPE, &previous, nullptr);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

bool gz_name(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("{}: read failed", path));
  std::string data = std::move(bytes).str();
  if (data.size() < 2 || static_cast<unsigned char>(data[0]) != 0x1f ||
      static_cast<unsigned char>(data[1]) != 0x8b)
    return data;
  FilterResult r;
  try {
    r = pipe_through({"gzip", "-dc"}, data);
  } catch (const std::runtime_error& e) {
    throw InputError(fmt::format("{}: gzip data, and {}", path, e.what()));
  }
  if (r.status != 0) throw InputError(fmt::format("{}: corrupt or truncated gzip data", path));
  return std::move(r.output);
}

std::string gzip_compress(const std::string& text) {
  FilterResult r = pipe_through({"gzip", "-c", "-6"}, text);
  if (r.status != 0) throw std::runtime_error("gzip failed");
  return std::move(r.output);
}

}  // namespace rooflens::profiler

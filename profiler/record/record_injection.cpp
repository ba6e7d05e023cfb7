// librooflens_record.so: the CUDA injection library `rooflens record` runs a program under. The
// CUDA driver loads it through CUDA_INJECTION64_PATH and calls InitializeInjection() during
// cuInit; NVTX loads it through NVTX_INJECTION64_PATH at the first NVTX call and gets CUPTI's own
// NVTX handler, so ranges of every domain and thread reach CUPTI as marker records. Whatever
// comes first starts the recording. Records are written to a part file per process as CUPTI
// delivers them (record_parts.hpp); the part is closed with a flush at exit and on SIGTERM (and
// SIGINT where the program has no handler of its own: Python turns it into KeyboardInterrupt and
// exits normally). Only InitializeInjection and InitializeInjectionNvtx2 are exported.
#include <cupti.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "profiler/gpu/cupti_records.hpp"
#include "profiler/trace/record_parts.hpp"
#include "profiler/trace/trace_json.hpp"

namespace rooflens::profiler {
namespace {

using nlohmann::json;

constexpr size_t kBufferBytes = 8u << 20;
constexpr int kMaxBuffersInFlight =
    128;  // 1 GiB of records not yet delivered: beyond, CUPTI drops and counts
constexpr uint32_t kFlushPeriodMs = 1000;  // a crash loses about this much

// Leaked on purpose: the state must outlive static destructors that run before our atexit flush.
struct Recorder {
  std::mutex mutex;
  FILE* part = nullptr;
  pid_t pid = 0;
  CuptiRecordConverter converter;
  uint64_t dropped = 0;
  std::atomic<int> buffers_in_flight{0};
  bool recording = false, finished = false;
};
Recorder* g_recorder = nullptr;
std::once_flag g_start;

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return all;
}

void write_line(Recorder& r, const json& line) {
  if (!r.part) return;
  std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace);
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), r.part);
  std::fflush(r.part);
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *size = 0;
  *buffer = nullptr;
  if (g_recorder->buffers_in_flight.fetch_add(1) >= kMaxBuffersInFlight) {
    g_recorder->buffers_in_flight.fetch_sub(1);
    return;  // CUPTI counts what it cannot store
  }
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  if (*buffer)
    *size = kBufferBytes;
  else
    g_recorder->buffers_in_flight.fetch_sub(1);
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t,
                               size_t valid) {
  Recorder& r = *g_recorder;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    Trace chunk;
    CUpti_Activity* record = nullptr;
    while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
      r.converter.take(record, chunk);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
      r.dropped += dropped;
    if (!chunk.activities.empty() || !chunk.api_calls.empty() || !chunk.ranges.empty() ||
        !chunk.devices.empty())
      write_line(r, json{{kRecordsLine,
                          {{"activities", chunk.activities},
                           {"api_calls", chunk.api_calls},
                           {"ranges", chunk.ranges},
                           {"devices", chunk.devices}}}});
  }
  if (buffer) {
    std::free(buffer);
    r.buffers_in_flight.fetch_sub(1);
  }
}

void CUPTIAPI ignore_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// The recorder's lock; from a signal handler only tried for a while, since the signal may have
// interrupted this very thread inside buffer_completed (then the part stays without its end line,
// and `rooflens record` says the process did not flush).
std::unique_lock<std::mutex> lock_recorder(Recorder& r, bool from_signal) {
  if (!from_signal) return std::unique_lock<std::mutex>(r.mutex);
  std::unique_lock<std::mutex> lock(r.mutex, std::defer_lock);
  for (int i = 0; i < 200 && !lock.try_lock(); ++i) usleep(10000);
  return lock;
}

// Flushes what CUPTI holds and closes the part with its end line. Once per process; a forked
// child that never exec'd shares the parent's part and must not write to it.
void finish(const char* reason, bool from_signal) {
  Recorder* r = g_recorder;
  if (!r || !r->recording || r->pid != getpid()) return;
  {
    auto lock = lock_recorder(*r, from_signal);
    if (!lock.owns_lock() || r->finished) return;
    r->finished = true;
  }
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  auto lock = lock_recorder(*r, from_signal);
  if (!lock.owns_lock()) return;
  write_line(*r, json{{kEndLine,
                       {{"dropped", r->dropped},
                        {"reason", reason},
                        {"open_ranges", r->converter.open_ranges()}}}});
  std::fclose(r->part);
  r->part = nullptr;
}

void at_exit() {
  finish("exit", false);
}

void on_terminating_signal(int sig) {
  std::string reason = "signal " + std::to_string(sig);
  finish(reason.c_str(), true);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Where the program left SIGTERM, SIGINT or SIGHUP at their default (which kills without running
// atexit); a program's own handler (Python's for SIGINT) is left alone and its exit flushes.
void install_signal_handlers() {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction ours {};
    ours.sa_handler = on_terminating_signal;
    sigemptyset(&ours.sa_mask);
    sigaction(sig, &ours, nullptr);
  }
}

void start_recording() {
  g_recorder = new Recorder();
  Recorder& r = *g_recorder;
  const char* dir = std::getenv(kRecordDirEnv);
  if (!dir || !*dir) return;  // loaded outside `rooflens record`: stay inert
  r.pid = getpid();
  std::string path = std::string(dir) + "/" + kPartPrefix + std::to_string(r.pid) + kPartSuffix;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || !(r.part = fdopen(fd, "w"))) return;
  std::string cmd = command_line();
  json args = json::array();
  for (size_t i = 0; i < cmd.size();) {
    size_t end = cmd.find('\0', i);
    if (end == std::string::npos) end = cmd.size();
    args.push_back(cmd.substr(i, end - i));
    i = end + 1;
  }
  write_line(r, json{{kPartLine, {{"pid", r.pid}, {"command", args}}}});
  // One subscriber per process: under nsys or ncu this fails, and the part says why.
  CUpti_SubscriberHandle subscriber = nullptr;
  CUptiResult rc = cuptiSubscribe(&subscriber, ignore_callback, nullptr);
  if (rc != CUPTI_SUCCESS) {
    std::string why = rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                          ? " (CUPTI is taken: another profiler, e.g. nsys or ncu, owns it)"
                          : " (no NVIDIA driver or GPU?)";
    write_line(r, json{{kUnavailableLine, "cuptiSubscribe: " + cupti_error(rc) + why}});
    return;
  }
  rc = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (rc != CUPTI_SUCCESS) {
    write_line(r, json{{kUnavailableLine, "cuptiActivityRegisterCallbacks: " + cupti_error(rc)}});
    return;
  }
  for (CUpti_ActivityKind k : kTimelineKinds) {
    rc = cuptiActivityEnable(k);
    if (rc != CUPTI_SUCCESS) {
      write_line(
          r, json{{kUnavailableLine, "cuptiActivityEnable(" + std::to_string(static_cast<int>(k)) +
                                         "): " + cupti_error(rc)}});
      return;
    }
  }
  // Device names; CUPTI may refuse the kind once a device is up, and then the trace has none.
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
  cuptiActivityFlushPeriod(kFlushPeriodMs);
  r.recording = true;
  std::atexit(at_exit);
  install_signal_handlers();
}

}  // namespace
}  // namespace rooflens::profiler

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  std::call_once(rooflens::profiler::g_start, rooflens::profiler::start_recording);
  return 1;
}

// NVTX's injection entry point: start recording (so that markers are enabled before the first
// range), then hand NVTX to CUPTI's handler in the libcupti this library is bound to.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    void* get_export_table) {
  std::call_once(rooflens::profiler::g_start, rooflens::profiler::start_recording);
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) || !info.dli_fname) return 0;
  void* cupti = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (!cupti) return 0;
  using Init = int (*)(void*);
  auto init = reinterpret_cast<Init>(dlsym(cupti, "InitializeInjectionNvtx2"));
  return init ? init(get_export_table) : 0;
}

#include "profiler/gpu/cupti_session.hpp"

#include <cupti.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "profiler/gpu/cupti_records.hpp"

namespace rooflens::profiler {

namespace {

constexpr size_t kBufferBytes = 8u << 20;
constexpr size_t kBuffers = 32;  // 256 MiB of records between flushes before anything drops

// CUPTI calls back into free functions: one session per process (CUPTI allows one subscriber).
struct Shared {
  std::mutex mutex;
  std::vector<uint8_t*> free_buffers;
  std::vector<std::unique_ptr<uint8_t[]>> storage;
  Trace pending;
  CuptiRecordConverter converter;
};
Shared* g_shared = nullptr;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  std::lock_guard<std::mutex> lock(g_shared->mutex);
  *max_records = 0;
  if (g_shared->free_buffers.empty()) {  // every buffer is in use: CUPTI drops and counts
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = g_shared->free_buffers.back();
  g_shared->free_buffers.pop_back();
  *size = kBufferBytes;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size,
                               size_t valid) {
  std::lock_guard<std::mutex> lock(g_shared->mutex);
  CUpti_Activity* record = nullptr;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
    g_shared->converter.take(record, g_shared->pending);
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
    g_shared->pending.dropped += dropped;
  if (buffer) g_shared->free_buffers.push_back(buffer);
  (void)size;
}

void CUPTIAPI no_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

}  // namespace

void prepare_nvtx_injection() {
  if (std::getenv("NVTX_INJECTION64_PATH")) return;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) && info.dli_fname)
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

struct CuptiSession::Impl {
  Shared shared;
  CUpti_SubscriberHandle subscriber = nullptr;
  bool ok = false;
  std::string failure;
  std::vector<CUpti_ActivityKind> enabled;
};

CuptiSession::CuptiSession() : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  for (size_t i = 0; i < kBuffers; ++i) {
    s.shared.storage.emplace_back(new uint8_t[kBufferBytes]);  // new[] aligns to 16 >= CUPTI's 8
    s.shared.free_buffers.push_back(s.shared.storage.back().get());
  }
  // One subscriber per process: under nsys or ncu this fails, and the harness falls back.
  CUptiResult r = cuptiSubscribe(&s.subscriber, no_callback, nullptr);
  if (r != CUPTI_SUCCESS) {
    s.subscriber = nullptr;
    s.failure =
        fmt::format("CUPTI subscribe failed: {} (another profiler, e.g. nsys or ncu, owns CUPTI)",
                    cupti_error(r));
    return;
  }
  g_shared = &s.shared;
  r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    s.failure = fmt::format("CUPTI buffer callbacks refused: {}", cupti_error(r));
    return;
  }
  std::vector<CUpti_ActivityKind> kinds(std::begin(kTimelineKinds), std::end(kTimelineKinds));
  kinds.push_back(
      CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);  // the harness pushes an id around each layer
  for (CUpti_ActivityKind k : kinds) {
    r = cuptiActivityEnable(k);
    if (r != CUPTI_SUCCESS) {
      s.failure =
          fmt::format("CUPTI activity kind {} refused: {}", static_cast<int>(k), cupti_error(r));
      return;
    }
    s.enabled.push_back(k);
  }
  s.ok = true;
}

CuptiSession::~CuptiSession() {
  Impl& s = *impl_;
  if (s.ok) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind k : s.enabled) cuptiActivityDisable(k);
  if (s.subscriber) cuptiUnsubscribe(s.subscriber);
  if (g_shared == &s.shared) {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    g_shared = nullptr;
  }
}

bool CuptiSession::ok() const {
  return impl_->ok;
}
const std::string& CuptiSession::failure() const {
  return impl_->failure;
}

Trace CuptiSession::flush() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(impl_->shared.mutex);
  Trace t = std::move(impl_->shared.pending);
  impl_->shared.pending = Trace{};
  return t;
}

void CuptiSession::push_external(uint64_t id) {
  if (impl_->ok)
    cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void CuptiSession::pop_external() {
  uint64_t last = 0;
  if (impl_->ok)
    cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

}  // namespace rooflens::profiler

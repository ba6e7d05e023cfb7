#include "profiler/cupti_session.hpp"

#include <cupti.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

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
  std::unordered_map<uint32_t, std::pair<uint64_t, std::string>> open_markers;  // id -> (start, name)
  std::unordered_map<uint32_t, std::string> marker_domains;
};
Shared* g_shared = nullptr;

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return fmt::format("{} ({})", s ? s : "unknown", static_cast<int>(r));
}

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

std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name) return name;
  return fmt::format("api#{}", cbid);
}

void take_record(CUpti_Activity* r, Trace& t, Shared& s) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(r);
      GpuActivity a;
      a.kind = GpuActivity::Kind::kernel;
      a.name = k->name ? k->name : "?";
      a.start_ns = k->start;
      a.end_ns = k->end;
      a.correlation_id = k->correlationId;
      a.stream = k->streamId;
      t.activities.push_back(std::move(a));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(r);
      t.activities.push_back({GpuActivity::Kind::memcpy, "memcpy", m->start, m->end, m->correlationId, m->streamId, m->bytes});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(r);
      t.activities.push_back({GpuActivity::Kind::memset, "memset", m->start, m->end, m->correlationId, m->streamId, m->bytes});
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      auto* a = reinterpret_cast<CUpti_ActivityAPI*>(r);
      CUpti_CallbackId cbid = a->cbid;
      uint64_t start = a->start, end = a->end;
      uint32_t corr = a->correlationId;
      auto domain = r->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
      t.api_calls.push_back({api_name(domain, cbid), start, end, corr});
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      auto* e = reinterpret_cast<CUpti_ActivityExternalCorrelation*>(r);
      t.externals.push_back({e->correlationId, e->externalId});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      auto* m = reinterpret_cast<CUpti_ActivityMarker2*>(r);
      uint32_t id = m->id, flags = m->flags;
      uint64_t ts = m->timestamp;
      if (flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
        s.open_markers[id] = {ts, m->name ? m->name : ""};
        s.marker_domains[id] = m->domain ? m->domain : "";
      } else if (flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        auto it = s.open_markers.find(id);
        if (it != s.open_markers.end()) {
          t.ranges.push_back({s.marker_domains[id], it->second.second, it->second.first, ts});
          s.open_markers.erase(it);
          s.marker_domains.erase(id);
        }
      }
      break;
    }
    default: break;
  }
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  std::lock_guard<std::mutex> lock(g_shared->mutex);
  CUpti_Activity* record = nullptr;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
    take_record(record, g_shared->pending, *g_shared);
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS) g_shared->pending.dropped += dropped;
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
    s.failure = fmt::format("CUPTI subscribe failed: {} (another profiler, e.g. nsys or ncu, owns CUPTI)", cupti_error(r));
    return;
  }
  g_shared = &s.shared;
  r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    s.failure = fmt::format("CUPTI buffer callbacks refused: {}", cupti_error(r));
    return;
  }
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                               CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                               CUPTI_ACTIVITY_KIND_MARKER}) {
    r = cuptiActivityEnable(k);
    if (r != CUPTI_SUCCESS) {
      s.failure = fmt::format("CUPTI activity kind {} refused: {}", static_cast<int>(k), cupti_error(r));
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

bool CuptiSession::ok() const { return impl_->ok; }
const std::string& CuptiSession::failure() const { return impl_->failure; }

Trace CuptiSession::flush() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(impl_->shared.mutex);
  Trace t = std::move(impl_->shared.pending);
  impl_->shared.pending = Trace{};
  return t;
}

void CuptiSession::push_external(uint64_t id) {
  if (impl_->ok) cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void CuptiSession::pop_external() {
  uint64_t last = 0;
  if (impl_->ok) cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

}  // namespace rooflens::profiler

#include "profiler/gpu/cupti_records.hpp"

namespace rooflens::profiler {

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return std::string(s ? s : "unknown") + " (" + std::to_string(static_cast<int>(r)) + ")";
}

std::string cupti_api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name) return name;
  return "api#" + std::to_string(cbid);
}

void CuptiRecordConverter::take_marker(const CUpti_ActivityMarker2* m, Trace& t) {
  uint32_t id = m->id, flags = m->flags;
  uint64_t ts = m->timestamp;
  CUpti_ActivityObjectKind object = m->objectKind;
  uint64_t tid = object == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0;
  // CUPTI names the starting thread for every range. A range ended on another thread is a
  // start/end range: it belongs to the process (tid 0), not to the thread that started it.
  auto finish = [&](OpenMarker&& o, uint64_t end_ns, uint64_t end_tid) {
    uint64_t owner = o.tid == end_tid ? o.tid : 0;
    t.ranges.push_back({std::move(o.domain), std::move(o.name), o.start_ns, end_ns, o.pid, owner});
  };
  if (flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    OpenMarker o;
    o.start_ns = ts;
    o.name = m->name ? m->name : "";
    o.domain = m->domain ? m->domain : "";
    o.pid = m->objectId.pt.processId;
    o.tid = tid;
    // The end can arrive first: the ending thread's buffer may be handed over before the
    // starting thread's.
    auto early = ended_.find(id);
    if (early != ended_.end()) {
      finish(std::move(o), early->second.end_ns, early->second.tid);
      ended_.erase(early);
    } else {
      open_[id] = std::move(o);
    }
  } else if (flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto it = open_.find(id);
    if (it != open_.end()) {
      finish(std::move(it->second), ts, tid);
      open_.erase(it);
    } else {
      ended_[id] = {ts, tid};
    }
  }
}

void CuptiRecordConverter::take(const CUpti_Activity* r, Trace& t) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      // Records are packed: fields are copied into the plain struct one by one.
      auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      GpuActivity a;
      a.kind = GpuActivity::Kind::kernel;
      a.name = k->name ? k->name : "?";
      a.start_ns = k->start;
      a.end_ns = k->end;
      a.correlation_id = k->correlationId;
      a.stream = k->streamId;
      a.device = k->deviceId;
      a.context = k->contextId;
      a.graph_id = k->graphId;
      t.activities.push_back(std::move(a));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      GpuActivity a{GpuActivity::Kind::memcpy, "memcpy",    m->start, m->end,
                    m->correlationId,          m->streamId, m->bytes};
      a.device = m->deviceId;
      a.context = m->contextId;
      a.graph_id = m->graphId;
      t.activities.push_back(std::move(a));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      GpuActivity a{GpuActivity::Kind::memset, "memset",    m->start, m->end,
                    m->correlationId,          m->streamId, m->bytes};
      a.device = m->deviceId;
      a.context = m->contextId;
      a.graph_id = m->graphId;
      t.activities.push_back(std::move(a));
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(r);
      CUpti_CallbackId cbid = a->cbid;
      auto domain = r->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
                                                           : CUPTI_CB_DOMAIN_DRIVER_API;
      t.api_calls.push_back({cupti_api_name(domain, cbid), a->start, a->end, a->correlationId,
                             a->processId, a->threadId});
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(r);
      t.externals.push_back({e->correlationId, e->externalId});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER:
      take_marker(reinterpret_cast<const CUpti_ActivityMarker2*>(r), t);
      break;
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      auto* d = reinterpret_cast<const CUpti_ActivityDevice5*>(r);
      uint32_t id = d->id;
      t.devices.push_back({id, d->name ? d->name : "?"});
      break;
    }
    default:
      break;
  }
}

}  // namespace rooflens::profiler

// CUPTI's records into plain ones, without a GPU: the converter is fed records as CUPTI lays
// them out.
#include <catch2/catch.hpp>

#include "profiler/gpu/cupti_records.hpp"

using rooflens::profiler::CuptiRecordConverter;
using rooflens::profiler::Trace;

namespace {

CUpti_ActivityMarker2 marker(uint32_t id, CUpti_ActivityFlag flag, uint64_t ts, const char* name,
                             CUpti_ActivityObjectKind object, uint32_t tid) {
  CUpti_ActivityMarker2 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flag;
  m.id = id;
  m.timestamp = ts;
  m.name = name;
  m.domain = name ? "rooflens-test" : nullptr;  // CUPTI names the domain on the start only
  m.objectKind = object;
  m.objectId.pt.processId = 42;
  m.objectId.pt.threadId = tid;
  return m;
}

void take(CuptiRecordConverter& c, const CUpti_ActivityMarker2& m, Trace& t) {
  c.take(reinterpret_cast<const CUpti_Activity*>(&m), t);
}

}  // namespace

TEST_CASE("an NVTX range's start and end become one range, in either order of arrival") {
  CuptiRecordConverter c;
  Trace t;
  // Pushed and popped on thread 7, in order.
  take(c,
       marker(1, CUPTI_ACTIVITY_FLAG_MARKER_START, 100, "outer", CUPTI_ACTIVITY_OBJECT_THREAD, 7),
       t);
  take(c, marker(1, CUPTI_ACTIVITY_FLAG_MARKER_END, 400, nullptr, CUPTI_ACTIVITY_OBJECT_THREAD, 7),
       t);
  // Started on one thread, ended on another whose buffer came first.
  // (CUPTI names the starting thread on the start, as on the H100 machine.)
  take(c, marker(2, CUPTI_ACTIVITY_FLAG_MARKER_END, 900, nullptr, CUPTI_ACTIVITY_OBJECT_THREAD, 8),
       t);
  CHECK(c.open_ranges() == 1);
  take(c,
       marker(2, CUPTI_ACTIVITY_FLAG_MARKER_START, 500, "across", CUPTI_ACTIVITY_OBJECT_THREAD, 7),
       t);
  REQUIRE(t.ranges.size() == 2);
  CHECK(c.open_ranges() == 0);
  CHECK(t.ranges[0].name == "outer");
  CHECK(t.ranges[0].start_ns == 100);
  CHECK(t.ranges[0].end_ns == 400);
  CHECK(t.ranges[0].tid == 7);
  CHECK(t.ranges[1].name == "across");
  CHECK(t.ranges[1].domain == "rooflens-test");
  CHECK(t.ranges[1].start_ns == 500);
  CHECK(t.ranges[1].end_ns == 900);
  CHECK(t.ranges[1].tid == 0);  // ended on another thread: a range of the process
  CHECK(t.ranges[1].pid == 42);
}

TEST_CASE("an NVTX range never ended stays open and is counted") {
  CuptiRecordConverter c;
  Trace t;
  take(c, marker(3, CUPTI_ACTIVITY_FLAG_MARKER_START, 10, "left", CUPTI_ACTIVITY_OBJECT_THREAD, 1),
       t);
  CHECK(t.ranges.empty());
  CHECK(c.open_ranges() == 1);
}

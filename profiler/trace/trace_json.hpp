#pragma once
// The records of a trace as JSON objects: the one definition of the trace format's fields, used
// by the trace file (trace_io), the `rooflens record` injection library's part files and their
// merge. Header-only dependencies (nlohmann), so the injection library carries no other library.
#include <nlohmann/json.hpp>

#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

// 1: the replay harness's records. 2: adds process/thread ids, devices, CUDA graph ids, how the
// recorded program ended. Readers accept both.
inline constexpr int kTraceVersion = 2;

const char* activity_kind_name(GpuActivity::Kind k);

// Records to and from JSON. from_json throws (nlohmann's exceptions, std::invalid_argument) on a
// missing or mistyped field; fields version 1 lacks are optional.
void to_json(nlohmann::json& j, const GpuActivity& a);
void from_json(const nlohmann::json& j, GpuActivity& a);
void to_json(nlohmann::json& j, const ApiCall& c);
void from_json(const nlohmann::json& j, ApiCall& c);
void to_json(nlohmann::json& j, const ExternalCorrelation& e);
void from_json(const nlohmann::json& j, ExternalCorrelation& e);
void to_json(nlohmann::json& j, const NvtxRange& r);
void from_json(const nlohmann::json& j, NvtxRange& r);
void to_json(nlohmann::json& j, const TraceDevice& d);
void from_json(const nlohmann::json& j, TraceDevice& d);

// Integer fields read strictly: a float, a negative number or one past the type's range is an
// error (std::invalid_argument naming the field), never a cast that wraps or is undefined.
uint64_t uint_field(const nlohmann::json& j, const char* key);
uint64_t uint_field_or(const nlohmann::json& j, const char* key, uint64_t fallback);
uint32_t u32_field(const nlohmann::json& j, const char* key);
uint32_t u32_field_or(const nlohmann::json& j, const char* key, uint32_t fallback);
int int_field_or(const nlohmann::json& j, const char* key, int fallback);

// The scalar fields of a trace (everything but the record arrays), and back.
nlohmann::json trace_header_json(const Trace& t);
void read_trace_header(const nlohmann::json& header, Trace& t);

}  // namespace rooflens::profiler

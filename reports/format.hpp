#pragma once
// Human units, used only by sinks: binary bytes (KiB, MiB, GiB), SI counts (K, M, G, T),
// times in ns/us/ms/s.
#include <cstdint>
#include <string>
#include <vector>

namespace rooflens::reports {

std::string human_bytes(double bytes);                        // "12.3 MiB"
std::string human_count(double count);                        // "8.18 G"
std::string human_time(double seconds);                       // "154 us"
std::string human_rate(double per_second, const char* unit);  // "989 TFLOP/s"
std::string with_commas(int64_t v);                           // "25,557,032"
std::string fit(const std::string& s, size_t width);          // truncate with a leading ellipsis
// A node name cut to `width` so that what tells it apart survives: parts holding a number (the
// block index, "h.3", "encoder_layer_0", "MatMul_1") and the last part stay; the others go first
// from the left, then from the middle ("...layers.31.self_attn.q_proj", ".../h.3/.../c_proj").
// A last part equal to `op` (exporters end names with the op type) is dropped: the op column says
// it.
std::string fit_name(const std::string& name, size_t width, const std::string& op = "");
// An op name cut to `width`: the domain goes first ("com.microsoft.FusedMatMul" -> "FusedMatMul").
std::string fit_op(const std::string& op, size_t width);
// `label` then `text`, broken at spaces into lines of at most `width` columns, the lines after the
// first indented as far as the label reaches; each line ends with '\n'.
std::string wrap(const std::string& label, const std::string& text, size_t width = 100);
// `label`, then `items` joined by ", ", broken only between items, as wrap breaks at spaces.
std::string wrap_list(const std::string& label, const std::vector<std::string>& items,
                      size_t width = 100);

}  // namespace rooflens::reports

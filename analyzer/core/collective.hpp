#pragma once
// The collectives a multi-GPU graph's nodes run (rooflens.AllReduce, rooflens.AllToAll) and the
// ones calibrate measures; priced by the link model (analyzer/hw/link_model.hpp).

namespace rooflens {

enum class Collective { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv };

}  // namespace rooflens

#pragma once
// The kernels eager PyTorch launches for each node of an inference forward (no autograd, the model
// in the analysis's dtype), and their GPU time: the training rules' forward kernels, where Hugging
// Face's code writes a fused node as several (eager_forward.cpp).
#include <vector>

#include "analyzer/transformers/analyze_transformer.hpp"

namespace rooflens::training {

// How a decode step stores the new token's keys and values. dynamic: Hugging Face's DynamicCache
// (generate()'s default) appends with torch.cat, copying each layer's whole K and V every step;
// fixed: a StaticCache writes the new token in place (index_copy_), as a captured graph needs.
enum class KvAppend { none, dynamic, fixed };

// Per analysis node (indexed like a.nodes; `g` its lowered graph), each kernel's predicted seconds
// in issue order; empty for nodes that launch nothing. An attention node of a decode step also
// launches its cache append (`kv`): two copy kernels, K and V, before the attention.
std::vector<std::vector<double>> eager_forward_kernels(const TransformerConfig& c,
                                                       const LoweringOptions& l, const Graph& g,
                                                       const Analysis& a, const Device& device,
                                                       KvAppend kv);

}  // namespace rooflens::training

#pragma once
// What a config does not say about its model: per model_type, the module names, the block
// layout, the norm kind and the few keys only that family reads. Everything a field states is
// read generically (config.cpp); an entry here is a few lines per family.
#include <string>
#include <vector>

#include "analyzer/transformers/config_reader.hpp"
#include "analyzer/transformers/model_config.hpp"

namespace rooflens {

struct Family {
  const char* model_type;
  // Structure before the generic fields are read (names, norm, block, defaults of fields).
  void (*defaults)(TransformerConfig&);
  // Family-only keys, after the generic fields; may override what they set.
  void (*read)(TransformerConfig&, ConfigReader&);
};

// Naming helpers (families.cpp) and the entries defined in
// families_hybrid.cpp.
namespace families_detail {
// Model-level names: the embedding, the layers' list and the final norm.
void model_names(TransformerConfig& c, const char* embed, const char* layers,
                 const char* final_norm);
// A fused q/k/v projection and the output projection of the attention module `attn`.
void fused_attention_names(TransformerConfig& c, const char* attn, const char* qkv, const char* o);
// An ungated MLP: up, activation, down (GPT-2, BERT, CLIP's and SigLIP's towers).
void plain_mlp(TransformerConfig& c, const char* up, const char* down);
// Llama 4 and Jamba: feed_forward.{gate,up,down}_proj, its router and experts.
void feed_forward_names(TransformerConfig& c);
// One warning per unread key of `r`'s object: a did-you-mean among `known` when one is near.
void warn_unread(TransformerConfig& c, const ConfigReader& r,
                 const std::vector<std::string>& unread, const std::vector<std::string>& known);

void minimax_names(TransformerConfig& c);
void minimax_keys(TransformerConfig& c, ConfigReader& r);
void mamba_names(TransformerConfig& c);
void mamba_keys(TransformerConfig& c, ConfigReader& r);
void jamba_names(TransformerConfig& c);
void jamba_keys(TransformerConfig& c, ConfigReader& r);
void dbrx_names(TransformerConfig& c);
void dbrx_keys(TransformerConfig& c, ConfigReader& r);
}  // namespace families_detail

// nullptr for a model_type without an entry (the generic decoder lowering applies).
const Family* find_family(const std::string& model_type);
const std::vector<Family>& families();

// Keys every family may carry that change nothing rooflens costs (token ids, dropout, init,
// norm epsilons, training losses, generation defaults); docs/transformers.md lists them.
const std::vector<std::string>& ignored_config_keys();

}  // namespace rooflens

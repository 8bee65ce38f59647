// The named fine-tuning recipes (json/recipes.hpp). Every value was read from the framework
// file named beside it, at the commit named in the recipe's source; nothing here is inferred.
#include "json/recipes.hpp"

#include "core/error.hpp"

namespace memest {

namespace {

// AnswerDotAI/fsdp_qlora, train.py at 05ed9f2a60f96a0795cb082bceab70a9b19fd213: the defaults of
// main() and what fsdp_qlora() / fsdp_main() build from them.
constexpr const char* kAnswerAi =
    "AnswerDotAI/fsdp_qlora@05ed9f2a60f96a0795cb082bceab70a9b19fd213 train.py";
// pytorch/torchtune at bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1.
constexpr const char* kTorchtuneSingle =
    "pytorch/torchtune@bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1 "
    "recipes/configs/llama3_1/8B_lora_single_device.yaml (recipe lora_finetune_single_device)";
constexpr const char* kTorchtuneDistributed =
    "pytorch/torchtune@bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1 "
    "recipes/configs/llama3_1/8B_lora.yaml (recipe lora_finetune_distributed)";
// huggingface/peft at 5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40.
constexpr const char* kPeft =
    "huggingface/peft@5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40 src/peft/tuners/lora/config.py "
    "(LoraConfig), src/peft/utils/constants.py, src/peft/mapping_func.py";

// torchtune's LoRA fields, the same in both Llama 3.1 8B LoRA configs.
std::vector<RecipeField> torchtune_lora_fields() {
  return {
      {"training.param_dtype", "\"bf16\"",
       "dtype: bf16 (the model is built under training.set_default_dtype(torch.bfloat16): no "
       "fp32 master copy)"},
      {"training.grad_dtype", "\"bf16\"", "dtype: bf16 (gradients take the parameters' dtype)"},
      {"training.optimizer", "\"adamw\"", "optimizer: torch.optim.AdamW, fused: True"},
      {"training.loss", "\"chunked\"",
       "loss: torchtune.modules.loss.LinearCrossEntropyLoss (num_output_chunks 8)"},
      {"training.compile", "\"none\"", "compile: False"},
      {"training.adapter.type", "\"lora\"", "model: torchtune.models.llama3_1.lora_llama3_1_8b"},
      {"training.adapter.rank", "8", "model.lora_rank: 8"},
      {"training.adapter.alpha", "16", "model.lora_alpha: 16"},
      {"training.adapter.dropout", "0.0", "model.lora_dropout: 0.0"},
      {"training.adapter.targets",
       R"(["q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])",
       "model.lora_attn_modules: [q_proj, v_proj, output_proj] (output_proj is o_proj), "
       "apply_lora_to_mlp: True (w1, w3, w2: gate/up/down_proj), apply_lora_to_output: False"},
      {"training.adapter.dtype", "\"bf16\"",
       "dtype: bf16 (torchtune's own LoRALinear, built in the default dtype; no peft upcast)"},
  };
}

std::vector<Recipe> make_recipes() {
  std::vector<Recipe> out;
  out.push_back(
      {"answerai-fsdp-qlora",
       "Answer.AI FSDP + QLoRA (train.py defaults): NF4 base, rank 64 on six projections, FSDP1 "
       "full shard with CPU offload, activation checkpointing, pure bf16",
       kAnswerAi,
       {
           {"parallel.tp", "1", "FSDP only: the model is wrapped in FullyShardedDataParallel"},
           {"parallel.pp", "1", "FSDP only"},
           {"parallel.zero", "3",
            "sharding_strategy=\"full_shard\" -> ShardingStrategy.FULL_SHARD"},
           {"training.framework", "\"fsdp1\"",
            "FSDP(model, ...) = torch.distributed.fsdp.FullyShardedDataParallel"},
           {"training.fsdp_use_orig_params", "false", "FSDP(..., use_orig_params=False)"},
           {"training.param_dtype", "\"bf16\"",
            "precision=\"bf16\": torch_dtype = compute_dtype = torch.bfloat16, no "
            "MixedPrecision policy (no fp32 master copy)"},
           {"training.grad_dtype", "\"bf16\"", "precision=\"bf16\""},
           {"training.optimizer", "\"adamw_foreach\"",
            "optimizer=\"adamw\" -> torch.optim.AdamW(..., fused=False): the foreach step"},
           {"training.recompute", "\"full\"",
            "use_gradient_checkpointing=True: apply_activation_checkpointing on every "
            "LlamaDecoderLayer / MistralDecoderLayer"},
           {"training.offload.params", "true",
            "use_cpu_offload=True -> CPUOffload(offload_params=True): sharded parameters and "
            "their gradients in host memory"},
           {"training.offload.optimizer", "true",
            "use_cpu_offload=True: the parameters are on the CPU, so the optimizer steps there "
            "and keeps its states there"},
           {"training.adapter.type", "\"qlora\"",
            "train_type=\"qlora\": replace_linear(..., Linear4bit, quant_type='nf4') then peft "
            "LoraConfig / get_peft_model"},
           {"training.adapter.rank", "64", "lora_rank: int = 64"},
           {"training.adapter.alpha", "16", "lora_alpha: int = 16"},
           {"training.adapter.dropout", "0.1", "lora_dropout: float = 0.1"},
           {"training.adapter.targets",
            R"(["q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "down_proj"])",
            "lora_target_modules=\"all\" -> [\"k_proj\", \"q_proj\", \"v_proj\", \"up_proj\", "
            "\"down_proj\", \"gate_proj\"] (fsdp_qlora(): no o_proj)"},
           {"training.adapter.double_quant", "true",
            "replace_linear(..., Linear4bit, compute_dtype, quant_type='nf4', quant_storage) "
            "leaves bitsandbytes Linear4bit's compress_statistics=True (quantised absmax)"},
           {"training.adapter.dtype", "\"fp32\"",
            "get_peft_model(model, peft_config): peft's autocast_adapter_dtype=True upcasts "
            "bf16 adapter weights to fp32 (tuners_utils.py cast_adapter_dtype)"},
       }});
  {
    Recipe r{"torchtune-lora-single-device",
             "torchtune LoRA on one GPU (Llama 3.1 8B config): rank 8 on q, v, o and the MLP, "
             "activation checkpointing, chunked loss, pure bf16",
             kTorchtuneSingle,
             {
                 {"parallel.gpus", "1", "recipe lora_finetune_single_device: one device"},
                 {"parallel.tp", "1", "one device"},
                 {"parallel.pp", "1", "one device"},
                 {"parallel.zero", "0", "one device, no sharding"},
                 {"training.framework", "\"pytorch\"",
                  "lora_finetune_single_device: the model is not wrapped"},
                 {"training.recompute", "\"full\"", "enable_activation_checkpointing: True"},
             }};
    for (const RecipeField& f : torchtune_lora_fields()) r.fields.push_back(f);
    out.push_back(r);
  }
  {
    Recipe r{"torchtune-lora",
             "torchtune LoRA on several GPUs (Llama 3.1 8B config): FSDP2, rank 8 on q, v, o "
             "and the MLP, no activation checkpointing, chunked loss, pure bf16",
             kTorchtuneDistributed,
             {
                 {"parallel.tp", "1", "lora_finetune_distributed: data parallel (FSDP2) only"},
                 {"parallel.pp", "1", "data parallel only"},
                 {"parallel.zero", "3",
                  "fsdp_reshard_after_forward absent: cfg.get(\"fsdp_reshard_after_forward\", "
                  "True) -> fully_shard(reshard_after_forward=True)"},
                 {"training.framework", "\"fsdp\"",
                  "lora_finetune_distributed: FSDP2 fully_shard per TransformerSelfAttentionLayer "
                  "and the root (torchtune/training/_distributed.py shard_model)"},
                 {"training.recompute", "\"none\"", "enable_activation_checkpointing: False"},
             }};
    for (const RecipeField& f : torchtune_lora_fields()) r.fields.push_back(f);
    out.push_back(r);
  }
  out.push_back(
      {"peft-lora-defaults",
       "peft LoraConfig() defaults: rank 8, alpha 8, no dropout, q_proj and v_proj, fp32 "
       "adapters (the training stack is not peft's: give --framework)",
       kPeft,
       {
           {"training.adapter.type", "\"lora\"", "LoraConfig"},
           {"training.adapter.rank", "8", "LoraConfig r: int = 8"},
           {"training.adapter.alpha", "8", "LoraConfig lora_alpha: int = 8"},
           {"training.adapter.dropout", "0.0", "LoraConfig lora_dropout: float = 0.0"},
           {"training.adapter.targets", R"(["q_proj", "v_proj"])",
            "LoraConfig target_modules=None -> TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING "
            "\"llama\": [\"q_proj\", \"v_proj\"] (utils/constants.py)"},
           {"training.adapter.dtype", "\"fp32\"",
            "get_peft_model(..., autocast_adapter_dtype=True): fp16/bf16 adapter weights upcast "
            "to fp32 (tuners_utils.py cast_adapter_dtype)"},
       }});
  return out;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

std::string recipe_names() {
  std::string out;
  for (const Recipe& r : recipes()) out += (out.empty() ? "" : ", ") + std::string(r.name);
  return out;
}

}  // namespace

const std::vector<Recipe>& recipes() {
  static const std::vector<Recipe> table = make_recipes();
  return table;
}

ojson recipes_json() {
  ojson out = ojson::array();
  for (const Recipe& r : recipes()) {
    ojson fields = ojson::object(), sources = ojson::object();
    for (const RecipeField& f : r.fields) {
      fields[f.path] = ojson::parse(f.value);
      sources[f.path] = f.source;
    }
    out.push_back({{"name", r.name},
                   {"description", r.description},
                   {"source", r.source},
                   {"fields", fields},
                   {"field_sources", sources}});
  }
  return out;
}

ojson apply_recipe(json& doc, const std::string& mode) {
  // without a valid mode the request is refused for its mode first
  if (!doc.is_object() || !doc.contains("recipe") || mode.empty()) return nullptr;
  const json& given = doc.at("recipe");
  if (!given.is_string()) {
    throw Error(MEMEST_ERR_TYPE, "recipe",
                "recipe: must be a recipe name (a string): " + recipe_names());
  }
  const std::string name = given.get<std::string>();
  const Recipe* recipe = nullptr;
  for (const Recipe& r : recipes()) {
    if (name == r.name) recipe = &r;
  }
  if (!recipe) {
    fail("recipe", "unknown recipe \"" + echo(name) + "\": use " + recipe_names(),
         MEMEST_ERR_UNKNOWN_PRESET);
  }
  if (mode != "pretrain") {
    fail("recipe", "a recipe sets pretrain-mode fields (parallel, training, training.adapter): "
                   "give mode pretrain, not " + mode);
  }
  ojson set = ojson::object(), kept = ojson::array();
  for (const RecipeField& f : recipe->fields) {
    const std::vector<std::string> parts = split_path(f.path);
    json* at = &doc;
    bool given_here = false;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      if (!at->contains(parts[i])) (*at)[parts[i]] = json::object();  // an absent block
      json& next = (*at)[parts[i]];
      if (!next.is_object()) {
        given_here = true;  // the request gives a non-object here: its reader names it
        break;
      }
      at = &next;
    }
    if (!given_here && at->contains(parts.back())) given_here = true;
    if (given_here) {
      kept.push_back(f.path);
      continue;
    }
    (*at)[parts.back()] = json::parse(f.value);
    set[f.path] = ojson::parse(f.value);
  }
  doc.erase("recipe");
  return {{"name", recipe->name}, {"source", recipe->source}, {"set", set}, {"kept", kept}};
}

}  // namespace memest

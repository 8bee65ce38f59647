/*
 * memest.h — the one public header of libmemest.
 *
 * libmemest estimates per-GPU memory for LLM training before a GPU is booked:
 * model states (parameters, gradients, optimizer per ZeRO stage) and 4D-parallel
 * pretraining (DP/TP/PP/CP with sequence parallelism, recomputation, Llama and GPT).
 *
 * Conventions (all functions):
 *  - Every entry point returns a memest_status. MEMEST_OK (0) is success.
 *  - On failure, memest_last_error() (thread-local) describes what went wrong and
 *    memest_last_error_field() names the offending request field ("parallel.tp").
 *  - Out-parameters are left untouched on failure (the JSON entry point is the one
 *    documented exception: its error document is the answer).
 *  - Every struct starts with `uint32_t struct_size`: the size of the struct as the caller
 *    was compiled (sizeof). The library reads and writes only that many bytes, so a caller
 *    built against an older, smaller version of this header keeps working: fields appended
 *    since then take their defaults on input and are not written on output. Requests get
 *    their defaults from the matching `_init(ptr, sizeof *ptr)` function; results and models
 *    or GPUs the library fills need only `struct_size` set (an `_init` call does that too).
 *    A struct_size below the first released layout, or above this library's, fails with
 *    MEMEST_ERR_STRUCT_SIZE. See docs/api-stability.md for the rules of evolution.
 *  - Requests refer to their model and GPU by pointer (read during the call only); arrays
 *    the library fills are caller buffers with an element size and a capacity, never
 *    fixed-size arrays inside structs.
 *  - No C++ exception ever crosses this boundary; nothing here is allocated for the
 *    caller except strings returned by memest_request_json (free with memest_string_free).
 *  - Sizes are in bytes, as double (the papers' formulas yield fractional bytes before
 *    rounding; a double holds every realistic size exactly enough, up to 2^53).
 */
#ifndef MEMEST_MEMEST_H
#define MEMEST_MEMEST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* Section: export macro and versions                                        */
/* ======================================================================== */

#if defined(MEMEST_STATIC)
#define MEMEST_API
#elif defined(_WIN32)
#if defined(MEMEST_BUILDING)
#define MEMEST_API __declspec(dllexport)
#else
#define MEMEST_API __declspec(dllimport)
#endif
#else
#define MEMEST_API __attribute__((visibility("default")))
#endif

#define MEMEST_VERSION_MAJOR 1
#define MEMEST_VERSION_MINOR 17
#define MEMEST_VERSION_PATCH 3
#define MEMEST_VERSION_NUMBER \
  (MEMEST_VERSION_MAJOR * 10000 + MEMEST_VERSION_MINOR * 100 + MEMEST_VERSION_PATCH)
#define MEMEST_VERSION_STRING "1.17.3"

/** Returns the library's version number (MAJOR*10000 + MINOR*100 + PATCH) at run time. */
MEMEST_API uint32_t memest_version_number(void);

/** Returns the library's version as a static string such as "1.2.0". Never NULL. */
MEMEST_API const char *memest_version_string(void);

/* ======================================================================== */
/* Section: status codes and errors                                          */
/* ======================================================================== */

typedef enum memest_status {
  MEMEST_OK = 0,
  MEMEST_ERR_INVALID_ARGUMENT = 1, /* a value is out of range or inconsistent */
  MEMEST_ERR_MISSING_FIELD = 2,    /* a required field was not given */
  MEMEST_ERR_TYPE = 3,             /* a JSON field has the wrong type */
  MEMEST_ERR_PARSE = 4,            /* the request is not valid JSON */
  MEMEST_ERR_UNKNOWN_PRESET = 5,   /* no model or GPU preset has that id */
  MEMEST_ERR_UNKNOWN_FIELD = 6,    /* a JSON object holds a field memest does not know */
  MEMEST_ERR_UNSUPPORTED = 7,      /* valid input that this version cannot model */
  MEMEST_ERR_OVERFLOW = 8,         /* sizes so large the result would not be finite */
  MEMEST_ERR_STRUCT_SIZE = 9,      /* struct_size is not a layout this library knows */
  MEMEST_ERR_NULL_POINTER = 10,    /* a required pointer argument was NULL */
  MEMEST_ERR_OUT_OF_RANGE = 11,    /* an index argument is past the end of a list */
  MEMEST_ERR_NO_MEMORY = 12,       /* allocation failed */
  MEMEST_ERR_INTERNAL = 13,        /* a bug in memest: please report it */
  MEMEST_STATUS_COUNT = 14
} memest_status;

/** Returns a static, lower-case name for a status ("invalid_argument"); "unknown" if out of range. */
MEMEST_API const char *memest_status_name(memest_status status);

/** Returns the message of the last failure on this thread ("" if none). Valid until the
 *  next memest call on this thread. */
MEMEST_API const char *memest_last_error(void);

/** Returns the request field the last failure on this thread is about ("parallel.tp"),
 *  or "" when the failure is not about one field. Valid until the next memest call. */
MEMEST_API const char *memest_last_error_field(void);

/** Returns the status of the last failure on this thread (MEMEST_OK if none). */
MEMEST_API memest_status memest_last_error_code(void);

/* ======================================================================== */
/* Section: models                                                           */
/* ======================================================================== */

/** Architecture family: picks the activation model (4D paper for Llama, Korthikanti et
 *  al. for GPT) and default conventions. */
typedef enum memest_family {
  MEMEST_FAMILY_LLAMA = 0, /* RMSNorm, SwiGLU, rotary, no dropout (Llama, Mistral, Qwen2, Gemma) */
  MEMEST_FAMILY_GPT = 1    /* LayerNorm, GeLU MLP, dropout (GPT-2/3, OPT, BLOOM, NeoX, CodeGen) */
} memest_family;

typedef enum memest_norm_type {
  MEMEST_NORM_RMS = 0,  /* weight only: h parameters */
  MEMEST_NORM_LAYER = 1 /* weight and bias: 2h parameters */
} memest_norm_type;

/** A decoder-only transformer's dimensions (names follow Hugging Face config.json).
 *  Fill with memest_model_init, memest_model_from_preset or memest_model_from_config_json.
 *  A model with num_parameters > 0 and hidden_size == 0 is a bare parameter count,
 *  accepted only by the model-states mode. */
/* Longest per-layer pattern a memest_model holds (memest_model.mixer_pattern, mlp_pattern). */
#define MEMEST_MAX_PATTERN_LAYERS 1023

typedef struct memest_model {
  uint32_t struct_size;
  char name[64];                    /* display name, NUL-terminated */
  int32_t family;                   /* memest_family */
  int64_t hidden_size;              /* h */
  int64_t num_hidden_layers;        /* L */
  int64_t num_attention_heads;      /* a */
  int64_t num_key_value_heads;      /* k (GQA groups; = a for MHA, 1 for MQA) */
  int64_t head_dim;                 /* 0 means hidden_size / num_attention_heads */
  int64_t intermediate_size;        /* h_ffn */
  int64_t vocab_size;               /* v */
  int64_t max_position_embeddings;  /* longest sequence the model supports; 0 = unbounded */
  int64_t learned_position_rows;    /* rows of a learned position table; 0 for rotary/ALiBi */
  int32_t tie_word_embeddings;      /* 1: LM head shares the input embedding */
  int32_t gated_mlp;                /* 1: SwiGLU/GeGLU (3 matrices), 0: 2 matrices */
  int32_t norm_type;                /* memest_norm_type */
  int32_t norms_per_layer;          /* 2 usually; 1 for parallel-residual CodeGen/GPT-J */
  int32_t attention_qkv_bias;       /* biases on Q, K, V projections */
  int32_t attention_out_bias;       /* bias on the attention output projection */
  int32_t mlp_bias;                 /* biases on the MLP projections */
  int32_t embedding_norm;           /* a LayerNorm right after the embedding (BLOOM) */
  int32_t final_norm;               /* a norm before the LM head (1 for all presets) */
  int32_t lm_head_bias;             /* a bias on the LM head (CodeGen) */
  double num_parameters;            /* > 0 with hidden_size == 0: a bare count */
  int32_t fused_qkv;                /* Q, K, V stored as one tensor (BLOOM, GPT-2, CodeGen, NeoX) */
  int32_t logits_fp32;              /* the HF model casts logits to fp32 before the loss */
  /* ---- appended in 1.1 (a 1.0 caller's struct ends above; these take their defaults) ---- */
  /* Mixture of experts (all 0 for a dense model). A layer is an MoE layer when its index i
     (0-based) is >= moe_first_dense_layers and (i + 1) % moe_layer_step == 0; the other layers
     have the dense MLP of intermediate_size. */
  int64_t num_experts;              /* routed experts per MoE layer (num_local_experts,
                                       n_routed_experts, num_experts); 0 = dense */
  int64_t num_experts_per_tok;      /* top-k: routed experts each token goes through */
  int64_t moe_intermediate_size;    /* width of one routed expert's MLP */
  int64_t num_shared_experts;       /* experts every token goes through (n_shared_experts) */
  int64_t shared_expert_intermediate_size; /* width of one shared expert; 0 = moe_intermediate_size */
  int64_t moe_first_dense_layers;   /* leading layers with a dense MLP (first_k_dense_replace) */
  int64_t moe_layer_step;           /* decoder_sparse_step / interleave_moe_layer_step; default 1
                                       (0 reads as 1) */
  int32_t router_bias;              /* the router (h x E) has a bias of E (gpt-oss) */
  int32_t shared_expert_gate;       /* a sigmoid gate (h x 1) on the shared experts (Qwen2-MoE) */
  /* Multi-head latent attention (DeepSeek-V2/V3): kv_lora_rank > 0 turns it on and replaces
     the Q/K/V projections; num_key_value_heads and head_dim are then not used for shapes. */
  int64_t q_lora_rank;              /* 0: a full q_proj; else q_a_proj, q_a_layernorm, q_b_proj */
  int64_t kv_lora_rank;             /* 0 = no MLA */
  int64_t qk_nope_head_dim;
  int64_t qk_rope_head_dim;
  int64_t v_head_dim;
  int64_t mtp_layers;               /* multi-token-prediction modules (num_nextn_predict_layers):
                                       counted apart (memest_param_count.mtp), not in the total */
  int32_t qk_norm;                  /* 0: none; 1: one head_dim-wide RMSNorm for q and one for k
                                       (Qwen3, Gemma 3); 2: full width, q a*d and k k*d (OLMo 2,
                                       OLMoE, Cohere use_qk_norm) */
  int32_t attention_sinks;          /* one learned sink logit per attention head (gpt-oss) */
  int32_t fused_gate_up;            /* gate and up projections stored as one tensor (Phi-3, GLM) */
  int32_t vision_excluded;          /* 1: read from a multimodal config; its vision tower and
                                       projector are not counted (set by the config reader) */
  /* ---- appended in 1.6 ---- */
  double final_logit_softcapping;   /* > 0: logits = cap * tanh(logits / cap) before the loss
                                       (Gemma 2): one more logits-sized tensor; 0 = none */
  /* ---- appended in 1.7 ---- */
  /* DeepSeek-V3.2's sparse-attention indexer in every layer (and MTP layer), with multi-head
     latent attention and q_lora_rank > 0: wq_b q_lora_rank x index_n_heads*index_head_dim,
     wk hidden_size x index_head_dim, k_norm (LayerNorm, 2 x index_head_dim), weights_proj
     hidden_size x index_n_heads. Both 0 (default): none. */
  int64_t index_n_heads;
  int64_t index_head_dim;
  /* ---- appended in 1.8 ---- */
  /* Hybrid models: the token mixer and the MLP of each decoder layer, one character per layer,
     NUL-terminated, exactly num_hidden_layers characters (at most MEMEST_MAX_PATTERN_LAYERS).
     Both empty (the default): every layer self-attention, its MLP by the MoE rule above.
     mixer_pattern: 'A' self-attention (the model's attention), 'M' Mamba-2, 'G' gated DeltaNet,
       'P' self-attention and Mamba-2 side by side on one normed input (Falcon-H1), '-' none;
       since 1.13 also 'S' Mamba-1 (the selective scan of Jamba) and 'K' Kimi Delta Attention
       (Kimi Linear). A model has one kind of state-space mixer ('M'/'P' or 'S') and one kind
       of delta-rule mixer ('G' or 'K');
     mlp_pattern: 'D' the dense MLP of intermediate_size, 'E' the MoE MLP, '-' none (empty: the
       MoE rule above). A layer holds one norm per mixer and per MLP it has. */
  char mixer_pattern[MEMEST_MAX_PATTERN_LAYERS + 1];
  char mlp_pattern[MEMEST_MAX_PATTERN_LAYERS + 1];
  /* The Mamba-2 mixer of 'M' and 'P' layers (mamba_ssm/modules/mamba2.py Mamba2, Hugging Face
     Mamba2Mixer): d_inner = mamba_num_heads * mamba_head_dim; in_proj hidden x (2 d_inner +
     2 groups*state + heads), a depthwise conv1d of conv_kernel over d_inner + 2 groups*state
     channels, dt_bias, A_log and D per head, a gated RMSNorm of d_inner, out_proj d_inner x
     hidden. All 0 without such layers. */
  int64_t mamba_num_heads;
  int64_t mamba_head_dim;
  int64_t mamba_state_size;         /* d_state (ssm_state_size) */
  int64_t mamba_groups;             /* n_groups of B and C */
  int64_t mamba_conv_kernel;        /* d_conv (conv_kernel) */
  int32_t mamba_proj_bias;          /* in_proj and out_proj have biases (use_bias) */
  int32_t mamba_conv_bias;          /* conv1d has a bias (use_conv_bias; default 1) */
  int32_t mamba_norm;               /* the gated RMSNorm before out_proj (default 1) */
  /* The gated DeltaNet of 'G' layers (Hugging Face models/qwen3_next Qwen3NextGatedDeltaNet):
     in_proj_qkvz hidden x (2 keys + 2 values), in_proj_ba hidden x 2 value heads, a depthwise
     conv1d of linear_conv_kernel over 2 keys + values channels, dt_bias and A_log per value
     head, a gated RMSNorm of linear_value_head_dim, out_proj values x hidden, where keys =
     linear_key_heads * linear_key_head_dim and values = linear_value_heads *
     linear_value_head_dim. All 0 without such layers. */
  int64_t linear_key_heads;
  int64_t linear_value_heads;
  int64_t linear_key_head_dim;
  int64_t linear_value_head_dim;
  int64_t linear_conv_kernel;
  int32_t attention_output_gate;    /* q_proj also yields a sigmoid gate on the attention output
                                       (Qwen3-Next): twice the query width */
  /* ---- appended in 1.13 ---- */
  /* The Mamba-1 mixer of 'S' layers (Hugging Face models/jamba JambaMambaMixer; mamba_ssm
     modules/mamba_simple.py Mamba): d_inner channels, each an SSM of its own, held as
     mamba_num_heads = d_inner heads of mamba_head_dim 1 with mamba_groups 1 (the Mamba-2
     paper's view of Mamba-1: heads of dimension 1 sharing one B and C); mamba_state_size,
     mamba_conv_kernel, mamba_proj_bias and mamba_conv_bias as above, and mamba_norm says
     whether dt, B and C pass RMSNorms (Jamba). in_proj hidden x 2 d_inner, a depthwise conv1d,
     x_proj d_inner x (dt_rank + 2 state), dt_proj dt_rank x d_inner (+ bias), A_log d_inner x
     state, D per channel, out_proj d_inner x hidden. 0 without 'S' layers. */
  int64_t mamba_dt_rank;
} memest_model;

/** Parameter counts of a model, by part. */
typedef struct memest_param_count {
  uint32_t struct_size;
  double total;            /* every parameter, tied embeddings counted once */
  double embedding;        /* word embeddings (+ learned positions, + embedding norm) */
  double per_layer;        /* one transformer layer */
  double lm_head;          /* LM head + final norm (0 for the head weights when tied) */
  /* ---- appended in 1.1 ---- */
  double active;           /* parameters one token goes through: everything but the routed
                              experts it is not sent to (= total for a dense model); the input
                              embedding table counts in full */
  double mtp;              /* multi-token-prediction modules, not in total (0 when none) */
  double per_dense_layer;  /* one layer with a dense MLP (= per_layer for a dense model; for an
                              MoE model per_layer is one MoE layer) */
  int64_t moe_layers;      /* layers with an MoE MLP (0 for a dense model) */
} memest_param_count;

/** Fills the first `struct_size` bytes of *model with defaults (Llama conventions, all sizes
 *  0) and sets model->struct_size. Pass sizeof *model. */
MEMEST_API memest_status memest_model_init(memest_model *model, uint32_t struct_size);

/** Looks up a built-in model preset by id ("llama-3.1-8b") into *model (whose struct_size the
 *  caller set). Fails with MEMEST_ERR_UNKNOWN_PRESET when there is none. */
MEMEST_API memest_status memest_model_from_preset(const char *id, memest_model *model);

/** Reads a Hugging Face config.json text into *model: the families of README "Supported
 *  model families", by model_type or else by architectures[0] (dense, mixture-of-experts and
 *  multi-head latent attention; of a Gemma 3 or Llama 4 multimodal config the language model,
 *  with vision_excluded set). */
MEMEST_API memest_status memest_model_from_config_json(const char *config_json,
                                                       memest_model *model);

/** Checks a model's dimensions; fails with the offending field named. */
MEMEST_API memest_status memest_model_validate(const memest_model *model);

/** Counts a model's parameters by part from its dimensions (count->struct_size set by the
 *  caller). */
MEMEST_API memest_status memest_model_parameter_count(const memest_model *model,
                                                      memest_param_count *count);

/** Number of built-in model presets. */
MEMEST_API uint32_t memest_model_preset_count(void);

/** Returns the id of model preset `index` (static string), or NULL past the end. */
MEMEST_API const char *memest_model_preset_id(uint32_t index);

/* ======================================================================== */
/* Section: GPUs                                                             */
/* ======================================================================== */

/** A GPU kind and its device profile. memory_bytes is the capacity the verdict compares
 *  against; the other fields drive the overhead model (peak_bytes, oom_predicted) and the
 *  throughput model of the search. Presets carry values calibrated on measured runs where the
 *  project has data (A100 40GB) and documented defaults elsewhere; calibrate/ measures them. */
typedef struct memest_gpu {
  uint32_t struct_size;
  char name[64];                 /* display name, NUL-terminated */
  double memory_bytes;           /* capacity per GPU */
  int32_t gpus_per_node;         /* GPUs linked by NVLink/xGMI in one node */
  double peak_bf16_tflops;       /* dense BF16 peak, TFLOP/s (0 if unknown) */
  double context_bytes;          /* CUDA context + framework/allocator init (LLMem's m_base) */
  double page_bytes;             /* allocator page the fine-tuning mode rounds to (2 MiB) */
  /* overhead model */
  double cp_buffer_bytes;        /* extra runtime memory once context parallelism is on */
  double fragmentation;          /* allocator reserve, as a fraction of the modelled bytes */
  /* throughput model */
  double gemm_efficiency;        /* ceiling of achieved / peak FLOP/s for large GEMMs */
  double gemm_half_tokens;       /* GEMM rows per GPU at which half that ceiling is reached */
  double attention_efficiency;   /* FlashAttention achieved / peak on causal attention FLOPs */
  double cp_attention_penalty;   /* attention slowdown per extra context-parallel rank */
  double tp_bandwidth_gbps;      /* effective TP/SP collective bandwidth inside a node, GB/s */
  double intra_node_gbps;        /* data-parallel collective bandwidth inside a node, GB/s */
  double inter_node_gbps;        /* per-GPU bandwidth across nodes, GB/s */
  double pipeline_stage_seconds; /* fixed cost per extra pipeline stage per iteration, s */
  /* ---- appended in 1.2 ---- */
  double pcie_gbps;              /* host <-> GPU bandwidth for offload transfers, GB/s per GPU
                                    (default 25: PCIe Gen4 x16's 32 GB/s at ~80 % efficiency) */
  double fp8;                    /* 1: fp8 tensor cores (Hopper, Ada, Blackwell); 0: none (Ampere
                                    and older). Custom GPUs default to 1 (not checked) */
  /* ---- appended in 1.5: the step-time model (README "Throughput model"). From 1.5 the model
     no longer reads gemm_half_tokens, cp_attention_penalty, tp_bandwidth_gbps and
     pipeline_stage_seconds (kept for the ABI, accepted and echoed) ---- */
  double peak_fp8_tflops;        /* dense FP8 Tensor Core peak, TFLOP/s (0: twice the BF16 peak
                                    when fp8 is 1) */
  double hbm_gbps;               /* device-memory bandwidth, GB/s: memory-bound kernels */
  double gemm_half_dim;          /* GEMM dimension (M, N or K) at which tile and wave
                                    quantisation halve the efficiency along it */
  double attention_half_seq;     /* keys per causal query block at which FlashAttention reaches
                                    half its attention_efficiency */
  double kernel_overhead_us;     /* launch and tail time per kernel, microseconds */
  double intra_node_latency_us;  /* collective latency inside the NVLink domain, microseconds */
  double inter_node_latency_us;  /* collective latency across nodes, microseconds */
  double fp8_gemm_efficiency;    /* achieved / peak of large FP8 GEMMs (0: gemm_efficiency) */
  double fa2_attention_efficiency; /* attention_efficiency of FlashAttention-2's kernels where
                                      they are slower than the GPU's best (Hopper); 0: the same */
  /* ---- appended in 1.9: NVFP4 ---- */
  double fp4;                    /* 1: trains in NVFP4 (Transformer Engine's NVFP4BlockScaling:
                                    SM 10.0 / 10.3, B200 and GB200); 0 (default, custom GPUs
                                    too): not */
  double peak_fp4_tflops;        /* dense FP4 Tensor Core peak, TFLOP/s (0: twice the FP8 peak
                                    when fp4 is 1) */
  /* ---- appended in 1.17: Triton's FlashAttention kernels ---- */
  double triton_attention_efficiency; /* attention_efficiency of a Triton FlashAttention kernel
                                         (attention_kernel TRITON); 0 (default): the library's
                                         share of FlashAttention-2's on the same GPU */
} memest_gpu;

/** Fills the first `struct_size` bytes of *gpu with defaults (no capacity, 8 GPUs per node,
 *  2 MiB pages, 512 MiB context) and sets gpu->struct_size. Pass sizeof *gpu. */
MEMEST_API memest_status memest_gpu_init(memest_gpu *gpu, uint32_t struct_size);

/** Looks up a built-in GPU preset by id ("a100-40gb") into *gpu (struct_size set by the
 *  caller). */
MEMEST_API memest_status memest_gpu_from_preset(const char *id, memest_gpu *gpu);

/** Number of built-in GPU presets. */
MEMEST_API uint32_t memest_gpu_preset_count(void);

/** Returns the id of GPU preset `index` (static string), or NULL past the end. */
MEMEST_API const char *memest_gpu_preset_id(uint32_t index);

/* ======================================================================== */
/* Section: common enums                                                     */
/* ======================================================================== */

typedef enum memest_recompute {
  MEMEST_RECOMPUTE_NONE = 0,
  MEMEST_RECOMPUTE_SELECTIVE = 1, /* recompute attention scores only (Korthikanti §5) */
  MEMEST_RECOMPUTE_FULL = 2,      /* keep only each layer's input */
  MEMEST_RECOMPUTE_OP_SELECTIVE = 3, /* torchtitan's per-op policy (fsdp/pytorch/deepspeed only;
                                        the search never enumerates it under megatron) */
  MEMEST_RECOMPUTE_COUNT = 4
} memest_recompute;

/** (1.11) Megatron-Core's --recompute-modules, the submodules recomputation SELECTIVE
 *  checkpoints (megatron/core/transformer/transformer_config.py recompute_modules, same names):
 *  bits (1u << value) of memest_pretrain_request.recompute_modules. */
typedef enum memest_recompute_module {
  MEMEST_RECOMPUTE_MODULE_CORE_ATTN = 0,      /* core attention (the default; with
                                                 FlashAttention it saves nothing more) */
  MEMEST_RECOMPUTE_MODULE_MOE_ACT = 1,        /* the experts' activation function: its output
                                                 (fc2's input) is discarded and recomputed */
  MEMEST_RECOMPUTE_MODULE_LAYERNORM = 2,      /* norms not fused into the next linear (MoE
                                                 layers' pre-MLP norm, latent attention's input
                                                 norm): their outputs are discarded */
  MEMEST_RECOMPUTE_MODULE_MLA_UP_PROJ = 3,    /* latent attention's up projections and RoPE:
                                                 Q, K and V are discarded */
  MEMEST_RECOMPUTE_MODULE_MLP = 4,            /* a dense layer's whole MLP (its fused norm
                                                 included): only its input is kept */
  MEMEST_RECOMPUTE_MODULE_MOE = 5,            /* an MoE layer's router, dispatch, experts and
                                                 combine: only its input is kept */
  MEMEST_RECOMPUTE_MODULE_SHARED_EXPERTS = 6, /* the shared experts */
  MEMEST_RECOMPUTE_MODULE_COUNT = 7
} memest_recompute_module;

/** (1.15) The copy of the trained weights the optimizer updates beside the weights the model
 *  computes with (memest_pretrain_request.master_weights), as the stacks store it:
 *  Megatron-Core's --main-params-dtype and store_param_remainders
 *  (megatron/core/optimizer/optimizer_config.py), Apex's DistributedFusedAdam store_params /
 *  store_param_remainders in the optimizer's dtype (NeMo's optim.dtype,
 *  apex/contrib/optimizers/distributed_fused_adam.py). */
typedef enum memest_master_weights {
  MEMEST_MASTER_AUTO = 0,      /* the framework's: fp32 under megatron and deepspeed with 16-bit
                                  or fp8 weights, none otherwise (default) */
  MEMEST_MASTER_FP32 = 1,      /* an fp32 copy: 4 bytes per parameter */
  MEMEST_MASTER_BF16 = 2,      /* a bf16 copy (DistributedFusedAdam in bf16 over fp8 weights) */
  MEMEST_MASTER_FP16 = 3,      /* an fp16 copy (--main-params-dtype fp16) */
  MEMEST_MASTER_REMAINDER = 4, /* the 16 bits an fp32 value has beyond bf16 weights: 2 bytes
                                  (store_param_remainders) */
  MEMEST_MASTER_NONE = 5,      /* none: the optimizer steps the weights themselves */
  MEMEST_MASTER_COUNT = 6
} memest_master_weights;

/** The training stack that runs the model (README "Training stack"). */
typedef enum memest_framework {
  MEMEST_FRAMEWORK_MEGATRON = 0,  /* Megatron-LM / Megatron-Core + Transformer Engine (default) */
  MEMEST_FRAMEWORK_FSDP = 1,      /* PyTorch FSDP2 fully_shard (torchtitan, torchtune, accelerate):
                                     zero 3 = reshard after forward, 2 = keep unsharded parameters
                                     between forward and backward, 0 = no sharding */
  MEMEST_FRAMEWORK_DEEPSPEED = 2, /* DeepSpeed ZeRO 0-3 */
  MEMEST_FRAMEWORK_PYTORCH = 3,   /* plain PyTorch: one GPU or DDP (tp = cp = pp = 1) */
  MEMEST_FRAMEWORK_FSDP1 = 4,     /* (1.6) PyTorch FSDP1 FullyShardedDataParallel with
                                     FlatParameters (accelerate, HF Trainer, LitGPT, axolotl):
                                     as FSDP plus its own mechanisms (the root unit kept
                                     unsharded between forward and backward; unsharded gradients
                                     kept under no_sync) */
  MEMEST_FRAMEWORK_COUNT = 5
} memest_framework;

/** How the loss is computed on the logits. */
typedef enum memest_loss {
  MEMEST_LOSS_AUTO = 0,         /* the framework's default: fused under megatron, else unfused */
  MEMEST_LOSS_FUSED = 1,        /* Megatron's vocab-parallel fused cross-entropy */
  MEMEST_LOSS_UNFUSED = 2,      /* F.cross_entropy on logits upcast to fp32 */
  MEMEST_LOSS_CHUNKED = 3,      /* chunked output + loss (torchtune's CEWithChunkedOutputLoss;
                                   chunks: loss_chunks, default 8) */
  MEMEST_LOSS_LINEAR_FUSED = 4, /* output projection fused with the loss: logits never whole */
  MEMEST_LOSS_UNFUSED_16BIT = 5, /* (1.4) F.cross_entropy on shifted 16-bit logits, no upcast
                                    (fp16/bf16 models without torch.autocast) */
  MEMEST_LOSS_CHUNKED_LM_HEAD = 6, /* (1.9) LitGPT: the LM head's output kept as chunks of
                                      128 tokens of each sequence (lm_head_chunk_size), a
                                      cross-entropy per chunk without .float() (loss_chunks,
                                      default ceil(seq_len / 128)) */
  MEMEST_LOSS_CHUNKED_LINEAR = 7,  /* (1.9) torchtitan's ChunkedLossWrapper: the LM head and
                                      the loss run chunk by chunk, each chunk's backward at
                                      once (loss_chunks, default 8) */
  MEMEST_LOSS_FLASH_ATTN = 8,      /* (1.10) flash-attn's CrossEntropyLoss (llm-foundry's default
                                      loss_fn fused_crossentropy): one kernel on the 16-bit
                                      logits, which it saves; backward writes their gradient */
  MEMEST_LOSS_COUNT = 9
} memest_loss;

/** The optimizer, which decides the state bytes per trainable parameter when
 *  optimizer_bytes is negative (MEMEST_OPTIMIZER_BYTES_DERIVE). */
typedef enum memest_optimizer {
  MEMEST_OPTIMIZER_ADAM = 0,             /* fp32 momentum + variance: 8 (+ 4 fp32 master) */
  MEMEST_OPTIMIZER_ADAMW = 1,            /* the same states as Adam */
  MEMEST_OPTIMIZER_ADAMW_8BIT = 2,       /* bitsandbytes block-wise: 2 bytes + fp32 absmax per
                                            block of 256 per state pair (+ master) */
  MEMEST_OPTIMIZER_PAGED_ADAMW_8BIT = 3, /* the same states in CUDA managed memory: reported in
                                            paged_bytes, outside the allocator's reserve */
  MEMEST_OPTIMIZER_SGD_MOMENTUM = 4,     /* momentum: 4 (+ master) */
  MEMEST_OPTIMIZER_SGD = 5,              /* no state (+ master) */
  MEMEST_OPTIMIZER_ADAMW_FOREACH = 6,    /* (1.6) torch.optim.AdamW's default multi-tensor path
                                            (foreach=True, not fused): the states of adamw plus
                                            one moment-sized temporary during step() */
  MEMEST_OPTIMIZER_PAGED_ADAMW_32BIT = 7, /* (1.6) bitsandbytes PagedAdamW32bit: fp32 states
                                             (8 bytes) in CUDA managed memory (paged_bytes) */
  MEMEST_OPTIMIZER_COUNT = 8
} memest_optimizer;

/** A parameter-efficient adapter on a frozen base (README "LoRA and QLoRA"). */
typedef enum memest_adapter {
  MEMEST_ADAPTER_NONE = 0,   /* full training: every parameter trainable (default) */
  MEMEST_ADAPTER_LORA = 1,   /* LoRA (peft tuners/lora): frozen base in param_dtype */
  MEMEST_ADAPTER_QLORA = 2,  /* QLoRA: frozen base linears in NF4 (bitsandbytes 4-bit, block 64) */
  MEMEST_ADAPTER_COUNT = 3
} memest_adapter;

/** Modules an adapter can target, by canonical name; lora_targets holds bit (1 << value) for
 *  each. A fused QKV (c_attn, qkv_proj, query_key_value) is targeted by any of q/k/v_proj, a
 *  fused gate_up_proj by gate_proj or up_proj; a GELU MLP's fc1 is up_proj, fc2 down_proj;
 *  MoE layers adapt every expert's (and shared expert's) MLP. */
typedef enum memest_lora_target {
  MEMEST_LORA_Q_PROJ = 0,
  MEMEST_LORA_K_PROJ = 1,
  MEMEST_LORA_V_PROJ = 2,
  MEMEST_LORA_O_PROJ = 3,
  MEMEST_LORA_GATE_PROJ = 4,
  MEMEST_LORA_UP_PROJ = 5,
  MEMEST_LORA_DOWN_PROJ = 6,
  MEMEST_LORA_LM_HEAD = 7,
  MEMEST_LORA_EMBED_TOKENS = 8,
  MEMEST_LORA_ROUTER = 9,      /* (1.7) an MoE layer's router: peft's "gate" in Qwen-MoE,
                                  Mixtral and DeepSeek (mlp.gate), "router" in Llama 4 and
                                  gpt-oss */
  MEMEST_LORA_IN_PROJ = 10,    /* (1.14) a hybrid's Mamba / gated DeltaNet mixer input
                                  projection: in_proj (Mamba-1, Mamba-2, Megatron's gated
                                  DeltaNet), in_proj_qkvz and in_proj_ba (Qwen3-Next) */
  MEMEST_LORA_OUT_PROJ = 11,   /* (1.14) the same mixers' output projection, out_proj */
  MEMEST_LORA_TARGET_COUNT = 12
} memest_lora_target;

/** (1.4) What torch.compile compiles: the value of memest_pretrain_request.compile. 1 (ALL)
 *  is the 1.2/1.3 meaning of compile = 1, so older callers keep their answers. */
typedef enum memest_compile {
  MEMEST_COMPILE_NONE = 0,  /* eager (default) */
  MEMEST_COMPILE_ALL = 1,   /* each block and the loss (torchtitan compile.components
                               ["model", "loss"], torchtune compile: True) */
  MEMEST_COMPILE_MODEL = 2, /* each block compiled, the loss eager (torchtitan ["model"];
                               torch.compile(block) per decoder layer) */
  MEMEST_COMPILE_LOSS = 3,  /* the loss alone (torchtitan ["loss"]) */
  MEMEST_COMPILE_COUNT = 4
} memest_compile;

/** (1.5) Communication a training stack overlaps with computation: bit (1 << value) of
 *  memest_pretrain_request.comm_overlap for each. */
typedef enum memest_overlap {
  MEMEST_OVERLAP_DP = 0, /* gradient reduction during backward and parameter all-gather during
                            forward (Megatron --overlap-grad-reduce / --overlap-param-gather,
                            FSDP prefetch, DDP buckets, DeepSpeed overlap_comm) */
  MEMEST_OVERLAP_TP = 1, /* TP/SP collectives hidden behind their GEMMs (Transformer Engine
                            userbuffers --tp-comm-overlap, torchtitan async TP) */
  MEMEST_OVERLAP_PP = 2, /* pipeline sends and receives overlapped with compute (Megatron
                            overlap_p2p_comm, interleaved schedule) */
  MEMEST_OVERLAP_EP = 3, /* MoE dispatch/combine all-to-all hidden behind expert compute
                            (DeepEP, --overlap-moe-expert-parallel-comm) */
  MEMEST_OVERLAP_COUNT = 4
} memest_overlap;

/** (1.5) How an MoE layer moves its tokens between expert-parallel ranks: the value of
 *  memest_pretrain_request.moe_dispatcher. */
typedef enum memest_moe_dispatcher {
  MEMEST_MOE_DISPATCHER_ALLTOALL = 0, /* NCCL all-to-all (Megatron --moe-token-dispatcher-type
                                         alltoall; default): every routed copy of a token is sent */
  MEMEST_MOE_DISPATCHER_DEEPEP = 1,   /* DeepEP (Megatron flex dispatcher, NeMo AutoModel): a
                                         token crosses to another node once per node holding its
                                         experts, then is forwarded over NVLink */
  MEMEST_MOE_DISPATCHER_COUNT = 2
} memest_moe_dispatcher;

/** (1.5) Which attention kernels run: the value of memest_pretrain_request.attention_kernel. */
typedef enum memest_attention_kernel {
  MEMEST_ATTENTION_AUTO = 0,   /* by framework (default): megatron FUSED (Transformer Engine's
                                  cuDNN attention), the others FLASH2 (PyTorch SDPA, flash-attn 2) */
  MEMEST_ATTENTION_FLASH2 = 1, /* FlashAttention-2's kernels: gpu.fa2_attention_efficiency */
  MEMEST_ATTENTION_FUSED = 2,  /* the GPU's best fused kernels (cuDNN, FlashAttention-3, XLA's
                                  cuDNN flash attention): gpu.attention_efficiency */
  MEMEST_ATTENTION_TRITON = 3, /* (1.17) a Triton FlashAttention kernel (llm-foundry's MPT
                                  with attn_impl "triton", ALiBi as a bias):
                                  gpu.triton_attention_efficiency */
  MEMEST_ATTENTION_KERNEL_COUNT = 4
} memest_attention_kernel;

/** comm_overlap value (the default): what the training stack overlaps by itself: megatron
 *  dp | pp (Megatron-Core's distributed data-parallel and interleaved p2p as its recipes run
 *  them), fsdp dp (FSDP2 prefetch), pytorch dp (DDP buckets), deepspeed dp with ZeRO-3 only
 *  (overlap_comm defaults to true for stage 3 alone). */
#define MEMEST_OVERLAP_STACK_DEFAULT (-1)

/** (1.5) Parts of a training step's time (seconds per iteration, summing to step_seconds). */
typedef enum memest_step_part {
  MEMEST_STEP_COMPUTE = 0,   /* forward and backward kernels (GEMMs, attention, memory-bound) */
  MEMEST_STEP_RECOMPUTE = 1, /* forward kernels repeated by activation recomputation */
  MEMEST_STEP_BUBBLE = 2,    /* pipeline fill and drain, and stages waiting for the slowest */
  MEMEST_STEP_TP_COMM = 3,   /* exposed tensor/sequence-parallel collectives */
  MEMEST_STEP_CP_COMM = 4,   /* exposed context-parallel ring exchange */
  MEMEST_STEP_DP_COMM = 5,   /* exposed gradient reduction and parameter gathers (DP, ZeRO, FSDP) */
  MEMEST_STEP_PP_COMM = 6,   /* exposed pipeline sends */
  MEMEST_STEP_EP_COMM = 7,   /* exposed MoE all-to-all */
  MEMEST_STEP_OPTIMIZER = 8, /* optimizer step, gradient clipping and zeroing */
  MEMEST_STEP_OFFLOAD = 9,   /* host <-> GPU transfers of offloaded parts */
  MEMEST_STEP_PART_COUNT = 10
} memest_step_part;

/** optimizer_bytes value asking the library to derive K from the optimizer, the framework
 *  and param_bytes (an fp32 master copy only where the stored dtype is below fp32 and the
 *  framework keeps masters: megatron, deepspeed). JSON requests derive K unless
 *  "optimizer_bytes" is given. */
#define MEMEST_OPTIMIZER_BYTES_DERIVE (-1.0)

/** (1.11) grad_bytes value asking the library for the framework's gradient dtype: fp32 main
 *  gradients under megatron and deepspeed, the parameters' stored dtype under fsdp, fsdp1 and
 *  pytorch (torch keeps .grad in the parameter's dtype). Pretraining and search JSON requests
 *  derive it unless "grad_dtype" is given; _init keeps 4. */
#define MEMEST_GRAD_BYTES_DERIVE (-1.0)

/** (1.16) adapter_bytes value asking the library for the stack's adapter dtype: the model's
 *  param_dtype under megatron (ms-swift's LoraParallelLinear and Megatron-Bridge build the
 *  adapters from the model config), fp32 elsewhere (peft's autocast_adapter_dtype). Pretraining
 *  and search JSON requests derive it unless "training.adapter.dtype" is given; _init keeps 4. */
#define MEMEST_ADAPTER_BYTES_DERIVE (-1.0)

/** Verdict bands of the 4D paper on the estimate: fits <= 80 % of capacity,
 *  tight <= 100 %, oom above. */
typedef enum memest_verdict {
  MEMEST_VERDICT_FITS = 0,
  MEMEST_VERDICT_TIGHT = 1,
  MEMEST_VERDICT_OOM = 2,
  MEMEST_VERDICT_UNKNOWN = 3, /* no GPU capacity was given */
  MEMEST_VERDICT_COUNT = 4
} memest_verdict;

/** Returns "fits", "tight", "oom" or "unknown". */
MEMEST_API const char *memest_verdict_name(memest_verdict verdict);

/** Returns the upper bound of a verdict band of the 4D paper's estimate as a fraction of
 *  capacity (FITS: 0.8, TIGHT: 1.0), or 0 for OOM and UNKNOWN, which have no upper bound. */
MEMEST_API double memest_verdict_limit(memest_verdict verdict);

/** The spread of memest's peak error, measured where it was not fitted (docs/accuracy.md,
 *  leave one source out): the standard deviation of ln(measured / predicted). From it, every
 *  result states the peak's 90 % band and the probability of running out of memory. (1.6) */
#define MEMEST_PEAK_ERROR_SIGMA 0.065

/** The verdict on a peak of the overhead model (peak_verdict in results), what front ends
 *  headline: FITS while the probability of OOM is at most 5 % (the peak at most
 *  exp(-1.645 * MEMEST_PEAK_ERROR_SIGMA) of capacity, rounded down), TIGHT up to all of it,
 *  OOM above. (0.95 before 1.6; 0.85 in 1.6-1.8, with sigma 0.097; 0.84 in 1.9-1.11, with
 *  sigma 0.100; 0.85 again since 1.12, sigma 0.096, once LitGPT's loss holds Lightning Fabric's
 *  fp32 copy of the logits; sigma 0.093 in 1.16.1-1.17.2, activation offloading staging one
 *  layer's saved set; 0.89 since 1.17.3, sigma 0.065, once DeepSpeed's whole ipg buffer and
 *  ZeRO-3 offload's partition copies explain most of peft's BLOOMZ ZeRO-3 offload run.) */
#define MEMEST_PEAK_FITS_FRACTION 0.89

/** The search's default max_oom_probability: a layout is ranked only when its probability of
 *  running out of memory is at most this. (1.6) */
#define MEMEST_SEARCH_MAX_OOM_PROBABILITY 0.25

typedef enum memest_activation_model {
  MEMEST_ACTIVATIONS_AUTO = 0,  /* by the model's family */
  MEMEST_ACTIVATIONS_LLAMA = 1, /* 4D paper, Eqs. 11-17 */
  MEMEST_ACTIVATIONS_GPT = 2,   /* Korthikanti et al., Table 2 */
  MEMEST_ACTIVATIONS_COUNT = 3
} memest_activation_model;

/** Every enumeration of this header, for memest_enum_count and memest_enum_name: bindings
 *  and the web page take their names from here instead of writing them out again. */
typedef enum memest_enum {
  MEMEST_ENUM_STATUS = 0,           /* memest_status: "ok", "invalid_argument", ... */
  MEMEST_ENUM_FAMILY = 1,           /* memest_family: "llama", "gpt" */
  MEMEST_ENUM_VERDICT = 2,          /* memest_verdict: "fits", "tight", "oom", "unknown" */
  MEMEST_ENUM_RECOMPUTE = 3,        /* memest_recompute: "none", "selective", "full" */
  MEMEST_ENUM_ACTIVATION_MODEL = 4, /* memest_activation_model: "auto", "llama", "gpt" */
  MEMEST_ENUM_PRUNE_REASON = 5,     /* memest_prune_reason: "oom", "tp_heads", ... */
  MEMEST_ENUM_FINETUNE_METHOD = 6,  /* memest_finetune_method: "cdp", "zero3", ... */
  MEMEST_ENUM_FRAMEWORK = 7,        /* memest_framework: "megatron", "fsdp", ... */
  MEMEST_ENUM_LOSS = 8,             /* memest_loss: "auto", "fused", "unfused", ... */
  MEMEST_ENUM_OPTIMIZER = 9,        /* memest_optimizer: "adam", "adamw", ... */
  MEMEST_ENUM_ADAPTER = 10,         /* memest_adapter: "none", "lora", "qlora" */
  MEMEST_ENUM_LORA_TARGET = 11,     /* memest_lora_target: "q_proj", ..., "embed_tokens" */
  MEMEST_ENUM_COMPILE = 12,         /* (1.4) memest_compile: "none", "all", "model", "loss" */
  MEMEST_ENUM_OVERLAP = 13,         /* (1.5) memest_overlap: "dp", "tp", "pp", "ep" */
  MEMEST_ENUM_STEP_PART = 14,       /* (1.5) memest_step_part: "compute", "recompute", ... */
  MEMEST_ENUM_MOE_DISPATCHER = 15,  /* (1.5) memest_moe_dispatcher: "alltoall", "deepep" */
  MEMEST_ENUM_ATTENTION_KERNEL = 16, /* (1.5) memest_attention_kernel: "auto", "flash2", "fused",
                                        "triton" (1.17) */
  MEMEST_ENUM_RECOMPUTE_MODULE = 17, /* (1.11) memest_recompute_module: "core_attn", "moe_act", ... */
  MEMEST_ENUM_MASTER_WEIGHTS = 18,  /* (1.15) memest_master_weights: "auto", "fp32", ... */
  MEMEST_ENUM_COUNT = 19
} memest_enum;

/** Number of values of enumeration `which` (values are 0 .. count-1); 0 for an unknown one. */
MEMEST_API uint32_t memest_enum_count(memest_enum which);

/** Returns the static name of `value` in enumeration `which` (the names JSON requests and
 *  responses use), or NULL when either is out of range. */
MEMEST_API const char *memest_enum_name(memest_enum which, int32_t value);

/** Returns the value named `name` in enumeration `which`, or -1 when there is none. */
MEMEST_API int32_t memest_enum_value(memest_enum which, const char *name);

/* ======================================================================== */
/* Section: model-states mode (ZeRO)                                         */
/* ======================================================================== */

/** Request for model-state memory per GPU under pure data parallelism with ZeRO. */
typedef struct memest_model_states_request {
  uint32_t struct_size;
  const memest_model *model; /* dimensions, or a bare num_parameters (required) */
  const memest_gpu *gpu;     /* optional (NULL or memory_bytes 0: verdict UNKNOWN) */
  int64_t gpus;            /* data-parallel degree N_d */
  int32_t zero;            /* 0: none, 1: P_os, 2: P_os+g, 3: P_os+g+p */
  double param_bytes;      /* bytes per weight (default 2, bf16) */
  double grad_bytes;       /* bytes per gradient (default 4, fp32 accumulation) */
  double optimizer_bytes;  /* K: bytes of optimizer state per parameter (default 12, Adam) */
} memest_model_states_request;

typedef struct memest_model_states_result {
  uint32_t struct_size;
  double num_parameters;
  double weights_bytes;     /* per GPU */
  double gradients_bytes;   /* per GPU */
  double optimizer_bytes;   /* per GPU */
  double estimate_bytes;    /* sum of the three: the ZeRO paper's per-device number */
  double capacity_bytes;    /* 0 when no GPU was given */
  int32_t verdict;          /* memest_verdict */
} memest_model_states_result;

/** Fills defaults (no model or GPU, 1 GPU, zero 0, bf16 weights, fp32 gradients, Adam: 18
 *  bytes/param) into the first `struct_size` bytes. Pass sizeof *request. */
MEMEST_API memest_status memest_model_states_request_init(memest_model_states_request *request,
                                                          uint32_t struct_size);

/** Computes model-state memory per GPU into *result (result->struct_size set by the caller). */
MEMEST_API memest_status memest_model_states(const memest_model_states_request *request,
                                             memest_model_states_result *result);

/* ======================================================================== */
/* Section: pretraining mode (4D parallelism)                                */
/* ======================================================================== */

typedef struct memest_pretrain_request {
  uint32_t struct_size;
  const memest_model *model;  /* required */
  const memest_gpu *gpu;      /* required; memory_bytes must be > 0 */
  /* parallel layout: data-parallel size d = gpus / (tp * cp * pp) */
  int64_t gpus;
  int64_t tp;
  int64_t cp;
  int64_t pp;
  int64_t vpp;                /* virtual stages per device (interleaved 1F1B); 1 = plain 1F1B */
  int32_t sequence_parallel;  /* 1 (default): SP on with TP */
  int32_t zero;               /* 1 (default): distributed optimizer over d*cp */
  /* training */
  int64_t seq_len;
  int64_t micro_batch;
  int64_t global_batch;       /* 0: not given (pipeline assumed full) */
  int32_t recompute;          /* memest_recompute */
  int32_t flash_attention;    /* 1 (default) */
  int32_t activation_model;   /* memest_activation_model */
  double param_bytes;         /* default 2 (bf16) */
  double grad_bytes;          /* default 4 (fp32 gradient accumulation);
                                 MEMEST_GRAD_BYTES_DERIVE (1.11): the framework's */
  double optimizer_bytes;     /* default 12 (Adam: fp32 master, momentum, variance) */
  int32_t uneven_pipeline;    /* 1: when pp does not divide the layers, the first and the last
                                 stage may each hold one layer fewer (as Llama 3 trained 405B);
                                 0 (default): pp*vpp must divide the layers */
  /* ---- appended in 1.2: the training stack (README "Training stack") ---- */
  int32_t framework;          /* memest_framework (default MEGATRON) */
  int32_t optimizer;          /* memest_optimizer (default ADAM); decides K only when
                                 optimizer_bytes < 0, and paging for PAGED_ADAMW_8BIT */
  int32_t optimizer_in_backward; /* 1: the step runs per parameter during backward (torchtune):
                                    at most one parameter's gradient is alive */
  int64_t recompute_every;    /* N >= 1: one block in N is checkpointed (default 1) */
  int32_t loss;               /* memest_loss (default AUTO: by framework) */
  int32_t fp8;                /* 1: Float8 / TE fp8 linear layers (needs gpu->fp8) */
  int32_t compile;            /* memest_compile: what torch.compile compiles (fsdp, pytorch,
                                 deepspeed); 0 none (default), 1 blocks and loss, 2 blocks,
                                 3 loss (values 2 and 3 from 1.4) */
  int32_t offload_optimizer;  /* 1: optimizer states and fp32 masters in host memory */
  int32_t offload_params;     /* 1: sharded parameters in host memory (needs zero >= 1 sharding
                                 of parameters: fsdp/deepspeed zero 3) */
  int32_t offload_activations; /* 1: saved activations in host memory, one layer staged */
  /* framework buckets; 0 = the framework's documented default */
  double ddp_bucket_mib;      /* DDP bucket_cap_mb (25) */
  double ds_reduce_bucket_size;       /* DeepSpeed reduce_bucket_size, elements (5e8) */
  double ds_allgather_bucket_size;    /* DeepSpeed allgather_bucket_size, elements (5e8) */
  double ds_prefetch_bucket_size;     /* stage3_prefetch_bucket_size, elements (5e7) */
  double ds_max_live_parameters;      /* stage3_max_live_parameters, elements (1e9) */
  double ds_param_persistence_threshold; /* stage3_param_persistence_threshold (1e5) */
  int32_t ddp_gradient_as_bucket_view; /* 1: DDP buckets are views of the gradients (no copy) */
  /* appended in 1.2: expert parallelism (mixture-of-experts models; Megatron-Core folding:
     expert layers run on etp x ep x edp x pp of the same GPUs, edp = gpus / (etp*ep*pp)) */
  int64_t ep;                 /* expert-parallel size, default 1; must divide num_experts */
  int64_t etp;                /* expert tensor-parallel size; 0 (default) = the same as tp */
  double moe_capacity_factor; /* 0 (default): drop-less routing (average load); > 0: each
                                 expert's tokens are cut or padded to this factor */
  int64_t last_stage_layers;  /* > 0: the last stage holds exactly this many layers, the other
                                 pp - 1 stages split the rest evenly (Megatron-LM's
                                 --decoder-last-pipeline-num-layers); 0 (default): as above.
                                 From 1.7 with vpp when every stage's layers divide by vpp */
  /* appended in 1.3: LoRA / QLoRA (README "LoRA and QLoRA"); with adapter NONE the rest is
     ignored */
  int32_t adapter;            /* memest_adapter (default NONE) */
  int64_t lora_rank;          /* r (default 8, peft LoraConfig) */
  double lora_alpha;          /* scaling alpha / r (default 8); no memory effect, echoed */
  double lora_dropout;        /* default 0; > 0 saves a dropout copy and mask per adapter */
  uint32_t lora_targets;      /* bit (1 << memest_lora_target) per module (default q_proj |
                                 v_proj, peft's default for Llama-style models) */
  double adapter_bytes;       /* bytes per adapter parameter, its gradient and (derived)
                                 optimizer states: 4 (default, fp32: peft casts adapters up) or 2;
                                 MEMEST_ADAPTER_BYTES_DERIVE (1.16): the stack's */
  int32_t double_quant;       /* qlora: 1 quantises the absmax values too
                                 (bnb_4bit_use_double_quant) */
  /* appended in 1.5: the step-time model */
  int32_t comm_overlap;       /* bit (1 << memest_overlap) per overlapped kind, or
                                 MEMEST_OVERLAP_STACK_DEFAULT (default) */
  int32_t moe_dispatcher;     /* memest_moe_dispatcher (default ALLTOALL) */
  int32_t attention_kernel;   /* memest_attention_kernel (default AUTO) */
  /* appended in 1.6: the precision policy and the loss beside the stored dtypes */
  double reduce_bytes;        /* bytes per element of the gradient reduction (FSDP
                                 MixedPrecisionPolicy reduce_dtype); 0 (default) = grad_bytes */
  int32_t loss_parallel;      /* 1 (default): under tp > 1 the loss works on vocab-parallel
                                 logits (Megatron; torchtitan's loss_parallel); 0: the logits are
                                 gathered to the full vocabulary first (torchtitan without it) */
  int32_t autocast;           /* -1 (default): fp32 parameters outside FSDP run under
                                 torch.autocast; 0: no autocast (pure fp32 / plain 16-bit
                                 compute in the stored dtype); 1: autocast */
  int32_t fp8_all_gather;     /* 1: FSDP2 gathers fp8 weights (torchao
                                 enable_fsdp_float8_all_gather; needs fp8) */
  int32_t no_sync;            /* -1 (default): fsdp1 keeps unsharded gradients across
                                 accumulation micro-batches (no_sync, as accelerate does), the
                                 others reduce every micro-batch; 0 / 1: as given */
  int32_t quantize_lm_head;   /* qlora: 1 quantises the (untied) LM head to NF4 too (LitGPT) */
  int32_t logits_held;        /* 1: the training loop keeps the model's output (and its logits)
                                 referenced through backward (`out = model(x);
                                 out.loss.backward()`); 0 (default): dropped before backward
                                 (torchtitan, torchtune, Megatron, the HF Trainer) */
  /* appended in 1.7: uneven and custom pipeline layouts */
  int64_t first_stage_layers; /* > 0: the first stage holds exactly this many layers
                                 (--decoder-first-pipeline-num-layers); with last_stage_layers
                                 the pp - 2 stages between split the rest evenly, else the
                                 other pp - 1 stages; with vpp every stage's layers must divide
                                 by vpp. 0 (default): none */
  const char *pipeline_layout; /* NULL or "" (default): none; else Megatron-LM's
                                  --pipeline-model-parallel-layout, e.g. "Et*3|(tt|)*29,m|L":
                                  pp * vpp virtual stages split by '|', of E (embedding), t
                                  (decoder layer), m (MTP layer, on the loss's stage), L (loss);
                                  vpp must equal its stages / pp */
  int32_t ddp;                /* (1.7) -1 (default): DistributedDataParallel wraps the model
                                 when dp > 1 (pytorch, fsdp at zero 0-1); 1: also on one
                                 process (torchrun with DDP around one GPU: its buckets are
                                 counted); 0: one GPU, not wrapped. A bucket size alone no
                                 longer wraps one process */
  /* appended in 1.9 */
  int32_t loss_chunks;        /* chunks of the chunked losses (CHUNKED, CHUNKED_LM_HEAD,
                                 CHUNKED_LINEAR); 0 (default): the loss's own default */
  int32_t fsdp_use_orig_params; /* fsdp1 + lora: 1 when each block's FlatParameter holds its
                                   frozen weights with the adapters (use_orig_params=True and
                                   a policy wrapping whole blocks: LitGPT's Fabric
                                   FSDPStrategy, accelerate's TRANSFORMER_BASED_WRAP without
                                   peft's policy): the flat gradient spans the frozen weights
                                   too. 0 (default): adapters wrapped on their own (peft's
                                   fsdp_auto_wrap_policy, fsdp_qlora) */
  int32_t fp4;                /* 1: NVFP4 linear layers (Transformer Engine NVFP4BlockScaling,
                                 Megatron-LM --fp4-format e2m1); needs gpu->fp4, framework
                                 megatron, and fp8 off */
  /* appended in 1.11 */
  uint32_t recompute_modules; /* bits (1u << memest_recompute_module): what recompute
                                 SELECTIVE checkpoints under framework megatron
                                 (--recompute-modules); 0 (default): Megatron's default,
                                 core_attn alone */
  /* appended in 1.12 */
  int32_t use_liger_kernel;   /* 1: Liger-Kernel patches the Hugging Face blocks (transformers'
                                 TrainingArguments use_liger_kernel, LLaMA-Factory
                                 enable_liger_kernel, NeMo AutoModel's default): fused
                                 RMSNorm and SwiGLU/GeGLU kernels that save less for
                                 backward; frameworks pytorch, deepspeed, fsdp and fsdp1.
                                 Liger's fused linear cross-entropy is loss LINEAR_FUSED.
                                 0 (default): the modules as written */
  /* appended in 1.15: how the optimizer stores its states (K when optimizer_bytes < 0) */
  int32_t master_weights;     /* memest_master_weights (default AUTO): the master copy; frameworks
                                 megatron and deepspeed */
  double optimizer_state_bytes; /* bytes per element of the optimizer's moments (Megatron-Core
                                   --exp-avg-dtype / --exp-avg-sq-dtype, NeMo's optim.dtype);
                                   0 (default): fp32 beside a master, else the weights' dtype */
} memest_pretrain_request;

/** Memory of one pipeline stage (one GPU of that stage). */
typedef struct memest_stage {
  uint32_t struct_size;
  int32_t index;               /* 0 = first stage (embedding) */
  int64_t layers;              /* transformer layers held by this stage */
  double microbatches_in_flight; /* activations kept, in micro-batches (1F1B: p - index) */
  double parameters;           /* parameters held by one GPU of this stage (after TP) */
  double weights_bytes;
  double gradients_bytes;
  double optimizer_bytes;
  double activations_bytes;
  double total_bytes;          /* the papers' number for this stage: states + activations */
  /* overhead model (what the 4D paper leaves to its 80 % margin), by part */
  double context_bytes;        /* CUDA context, library workspaces, NCCL init */
  double comm_buffer_bytes;    /* CP runtime buffers, TP/SP all-gather and PP send/recv buffers */
  double logits_bytes;         /* bf16 logits beside the fp32 copy (last stage) */
  double activation_correction_bytes; /* paper terms memest corrects (negative: fused SwiGLU
                                         keeps 6 sbh_ffn, not 8; the embedding keeps token ids) */
  double fragmentation_bytes;  /* allocator reserve */
  double overhead_bytes;       /* sum of the five above, phase_overlap_bytes (1.2) and
                                  optimizer_step_bytes (1.6) */
  double peak_bytes;           /* total_bytes + overhead_bytes */
  /* ---- appended in 1.2: the training stack's parts (all 0 under the default megatron) ---- */
  double peak_allocated_bytes; /* torch.cuda.max_memory_allocated: peak_bytes - fragmentation */
  double peak_reserved_bytes;  /* torch.cuda.max_memory_reserved: = peak_bytes (decides OOM) */
  double host_bytes;           /* CPU memory per GPU process for what is offloaded */
  double paged_bytes;          /* CUDA managed memory (paged optimizer states): on the GPU
                                  when it fits, outside the allocator; not in peak_bytes */
  double framework_buffer_bytes; /* FSDP all-gather/reduce-scatter, DDP and DeepSpeed buckets
                                    (in comm_buffer_bytes too) */
  double master_weights_bytes; /* fp32 master copy (in optimizer_bytes too; 0 when none) */
  double loss_bytes;           /* loss temporaries beyond the fused loss (in logits_bytes too) */
  double recompute_bytes;      /* working set of the block rebuilt under full recomputation
                                  (in activations_bytes too) */
  double offload_staging_bytes; /* GPU staging buffers of offloaded parts (in comm_buffer_bytes
                                   too) */
  double phase_overlap_bytes;  /* <= 0, in overhead_bytes: fsdp and pytorch without gradient
                                  accumulation allocate gradients during backward as activations
                                  are freed (zero_grad(set_to_none=True)), so the smaller of the
                                  forward-end set (activations + loss) and the backward-end set
                                  (gradients + recompute working set) is not alive at the peak;
                                  otherwise (not megatron) the smaller of the last stage's loss
                                  and its rebuilt block, which never coexist (1.4) */
  /* appended in 1.2: the expert part of this stage (included in the totals above) */
  int64_t moe_layers;              /* of `layers`, those with routed experts */
  double expert_parameters;        /* routed-expert parameters on one GPU (over ep x etp) */
  double expert_weights_bytes;     /* their weights, gradients and optimizer states (sharded */
  double expert_gradients_bytes;   /* by ZeRO over the expert data-parallel group edp) */
  double expert_optimizer_bytes;
  double expert_activations_bytes; /* router, dispatched tokens, expert MLPs, combine */
  double moe_dispatch_bytes;       /* all-to-all dispatch/combine buffers (in comm_buffer_bytes) */
  double mtp_parameters;           /* multi-token-prediction modules held here (last stage) */
  /* appended in 1.3: LoRA / QLoRA parts (0 without an adapter; then weights_bytes = base +
     adapter + metadata,
     gradients_bytes = adapter gradients, optimizer_bytes = adapter optimizer states) */
  double trainable_parameters; /* adapter parameters on one GPU of this stage */
  double base_weights_bytes;   /* the frozen base (NF4 data for qlora's quantised linears) */
  double adapter_weights_bytes;
  double adapter_gradients_bytes;
  double adapter_optimizer_bytes;
  double quant_metadata_bytes; /* qlora: absmax (and double-quant) statistics */
  double dequant_bytes;        /* qlora: one linear's weight dequantised to param_dtype during
                                  its matmul (in activations_bytes too) */
  /* appended in 1.6 */
  double optimizer_step_bytes; /* what optimizer.step() allocates beyond what the activations
                                  freed by then (adamw_foreach's temporaries; in overhead_bytes) */
  double unsharded_root_bytes; /* fsdp1: the root unit's parameters kept unsharded from forward
                                  to backward (in weights_bytes too) */
  double torch_max_memory_allocated_bytes; /* what torch.cuda.max_memory_allocated() reports:
                                              peak_allocated_bytes less the CUDA context */
  double torch_max_memory_reserved_bytes;  /* torch.cuda.max_memory_reserved(): peak_reserved_bytes
                                              less the CUDA context */
  double nvidia_smi_bytes;     /* what nvidia-smi shows for the process: reserved + context +
                                  paged (managed) memory */
} memest_stage;

typedef struct memest_pretrain_result {
  uint32_t struct_size;
  double num_parameters;     /* whole model */
  int64_t dp;                /* data-parallel size */
  int64_t num_microbatches;  /* per iteration, 0 when global_batch was not given */
  double estimate_bytes;     /* 4D paper Eq. 18: first stage, whole model when pp = 1 */
  double peak_bytes;         /* the most loaded stage, overhead model included */
  int32_t peak_stage;
  double capacity_bytes;
  double usage_fraction;     /* estimate_bytes / capacity_bytes */
  int32_t verdict;           /* memest_verdict, paper bands on estimate_bytes */
  int32_t stage_count;       /* = pp */
  int32_t activation_model;  /* the one used: memest_activation_model */
  int32_t oom_predicted;     /* 1 when peak_bytes exceeds capacity_bytes */
  double paper_peak_bytes;   /* the most loaded stage by the papers' terms alone */
  /* appended in 1.1 */
  int32_t peak_verdict;      /* memest_verdict on peak_bytes (MEMEST_PEAK_FITS_FRACTION) */
  /* appended in 1.2 */
  double peak_allocated_bytes; /* of the peak stage: peak_bytes - fragmentation */
  double peak_reserved_bytes;  /* = peak_bytes */
  double host_bytes;           /* of the peak stage (offloaded parts) */
  int32_t framework;           /* memest_framework used */
  int32_t loss;                /* memest_loss used (AUTO resolved) */
  double optimizer_bytes_per_parameter; /* K used (derived or given) */
  int64_t ep;                /* expert-parallel size (1 for a dense model) */
  int64_t etp;               /* expert tensor-parallel size in effect */
  int64_t edp;               /* expert data-parallel size: gpus / (etp*ep*pp) (dense: dp*cp) */
  /* appended in 1.3 */
  double trainable_parameters; /* whole model: adapter parameters, or num_parameters without */
  /* appended in 1.5: throughput of the layout (all 0 when global_batch was not given) */
  double step_seconds;        /* per iteration: the sum of the parts below */
  double tokens_per_s;        /* whole job */
  double tflops_per_gpu;      /* model FLOP/s per GPU (Narayanan et al.'s count, no recompute) */
  double mfu;                 /* tflops_per_gpu / peak_bf16_tflops */
  double compute_seconds;     /* memest_step_part, seconds per iteration: */
  double recompute_seconds;
  double bubble_seconds;
  double tp_comm_seconds;
  double cp_comm_seconds;
  double dp_comm_seconds;
  double pp_comm_seconds;
  double ep_comm_seconds;
  double optimizer_seconds;
  double offload_seconds;
  /* appended in 1.6: what a user compares (of the peak stage) and the verdict's margin */
  double torch_max_memory_allocated_bytes; /* peak_allocated_bytes less the CUDA context */
  double torch_max_memory_reserved_bytes;  /* peak_reserved_bytes less the CUDA context */
  double nvidia_smi_bytes;     /* reserved + context + paged memory */
  double peak_low_bytes;       /* the 90 % band of the peak from memest's measured error */
  double peak_high_bytes;      /* (MEMEST_PEAK_ERROR_SIGMA): peak * exp(-/+1.645 sigma) */
  double oom_probability;      /* P(the real peak exceeds capacity_bytes) under that error */
  double margin_bytes;         /* capacity_bytes - peak_bytes (negative: over by that much) */
} memest_pretrain_result;

/** Fills defaults: no model or GPU, 1 GPU, tp = cp = pp = vpp = 1, SP on, zero 1, seq 2048,
 *  micro batch 1, no recompute, FlashAttention on, bf16 weights + fp32 gradients + Adam.
 *  Pass sizeof *request. */
MEMEST_API memest_status memest_pretrain_request_init(memest_pretrain_request *request,
                                                      uint32_t struct_size);

/** Estimates per-GPU memory for pretraining. Writes *result (result->struct_size set by the
 *  caller) and up to `stage_capacity` stages into the caller's array `stages`, whose
 *  elements are `stage_size` bytes apart (sizeof(memest_stage) as the caller was compiled;
 *  `stages` may be NULL when stage_capacity is 0); result->stage_count tells how many exist.
 *  On failure neither *result nor any stage is written. */
MEMEST_API memest_status memest_pretrain(const memest_pretrain_request *request,
                                         memest_pretrain_result *result, memest_stage *stages,
                                         uint32_t stage_size, uint32_t stage_capacity);

/* ======================================================================== */
/* Section: layout search                                                    */
/* ======================================================================== */

/** One parallel layout of a pretraining run (the data-parallel size follows from the GPUs).
 *  Fill with memest_layout_init. */
typedef struct memest_layout {
  uint32_t struct_size;
  int64_t tp;
  int64_t cp;
  int64_t pp;
  int64_t vpp;
  int64_t micro_batch;
  int32_t recompute;          /* memest_recompute */
  int32_t zero;               /* 0..3 */
  /* appended in 1.2 */
  int64_t ep;                 /* expert-parallel size, default 1 */
  int64_t etp;                /* expert tensor-parallel size, 0 (default) = tp */
} memest_layout;

/** Why candidate layouts were dropped; counts are in memest_search_result.pruned. */
typedef enum memest_prune_reason {
  MEMEST_PRUNE_OOM = 0,                 /* predicted out of memory (overhead model) */
  MEMEST_PRUNE_TP_ACROSS_NODES = 1,     /* tp larger than gpus_per_node (tp_within_node) */
  MEMEST_PRUNE_TP_HEADS = 2,            /* tp does not divide the heads */
  MEMEST_PRUNE_TP_KV_HEADS = 3,         /* tp does not divide the key/value heads */
  MEMEST_PRUNE_TP_FFN = 4,              /* tp does not divide intermediate_size */
  MEMEST_PRUNE_GPUS = 5,                /* tp*cp*pp does not divide the GPUs */
  MEMEST_PRUNE_PP_LAYERS = 6,           /* pp larger than the layers */
  MEMEST_PRUNE_VPP = 7,                 /* vpp > 1 without pp >= 2 */
  MEMEST_PRUNE_LAYERS = 8,              /* pp*vpp does not divide the layers */
  MEMEST_PRUNE_CP_SEQUENCE = 9,         /* 2*cp does not divide the sequence */
  MEMEST_PRUNE_GLOBAL_BATCH = 10,       /* micro_batch*dp does not divide the global batch */
  MEMEST_PRUNE_INTERLEAVED = 11,        /* interleaving needs micro-batches % pp == 0 */
  MEMEST_PRUNE_EQUIVALENT = 12,         /* same run as one already counted (selective
                                           recomputation under FlashAttention = none; fsdp
                                           zero 1 = 3, pytorch zero 1 = 0) */
  MEMEST_PRUNE_FRAMEWORK = 13,          /* the training stack cannot run this layout (pytorch
                                           with tp/cp/pp > 1, DeepSpeed's pipeline with ZeRO
                                           2/3, ...: plan/stack.cpp); appended in 1.2 */
  MEMEST_PRUNE_EP_EXPERTS = 14,         /* ep does not divide num_experts (1.2) */
  MEMEST_PRUNE_EXPERT_GPUS = 15,        /* etp*ep*pp does not divide the GPUs (1.2) */
  MEMEST_PRUNE_ETP_FFN = 16,            /* etp does not divide moe_intermediate_size (1.2) */
  MEMEST_PRUNE_MOE_SP = 17,             /* MoE with tp > 1 needs sequence parallelism (1.2) */
  MEMEST_PRUNE_REASON_COUNT = 18        /* of this header; memest_enum_count(MEMEST_ENUM_PRUNE_REASON)
                                           is the library's */
} memest_prune_reason;

/** Fills defaults (tp = cp = pp = vpp = micro_batch = 1, no recompute, ZeRO 1) into the first
 *  `struct_size` bytes. Pass sizeof *layout. */
MEMEST_API memest_status memest_layout_init(memest_layout *layout, uint32_t struct_size);

/** Returns a static name for a prune reason ("oom", "tp_heads", ...), "unknown" if out of range. */
MEMEST_API const char *memest_prune_reason_name(memest_prune_reason reason);

typedef struct memest_search_request {
  uint32_t struct_size;
  const memest_pretrain_request *base; /* required: model, gpu, gpus, seq_len, global_batch
                                          (> 0), precision, sequence_parallel, flash_attention;
                                          its layout fields are unused */
  /* the space to enumerate (ignored when `layouts` is given): every divisor of the GPUs up to
     the maxima, micro-batches dividing global_batch / dp */
  int64_t max_tp;                /* 0: gpus_per_node when tp_within_node, else gpus */
  int64_t max_cp;                /* 0: no limit */
  int64_t max_pp;                /* 0: no limit */
  int64_t max_vpp;               /* default 4 */
  int64_t max_micro_batch;       /* 0: no limit */
  uint32_t recompute_mask;       /* bit (1 << memest_recompute) per allowed value; default none,
                                    selective, full (7): op_selective (bit 3) is opt-in */
  uint32_t zero_mask;            /* bit (1 << stage) per allowed ZeRO stage; default 1 << 1 */
  int32_t tp_within_node;        /* default 1 */
  /* or: exactly these layouts (caller-owned, read during the call only; every element has
     the struct_size of layouts[0], which is the distance between elements) */
  const memest_layout *layouts;
  uint32_t layout_count;
  int32_t include_oom;           /* 1: rank predicted-OOM layouts too (after those that fit) */
  int32_t uneven_pipeline;       /* default 1: allow lighter first/last stages (see the pretrain
                                    request); 0: pp*vpp must divide the layers */
  /* appended in 1.2 */
  int64_t max_ep;                /* 0: no limit; a mixture-of-experts model's search enumerates
                                    ep over the divisors of the GPUs dividing num_experts and
                                    etp in {tp, 1}; a dense model only ep = 1 */
  /* appended in 1.5 */
  uint32_t fp8_options;          /* bit 0: without fp8, bit 1: with fp8; 0 (default): the base
                                    request's setting only */
  uint32_t compile_options;      /* bit (1 << memest_compile) per value to try; 0 (default): the
                                    base request's only */
  /* appended in 1.6 */
  double max_oom_probability;    /* layouts whose oom_probability exceeds this are pruned as
                                    "oom" (default MEMEST_SEARCH_MAX_OOM_PROBABILITY); 0.5 =
                                    the peak alone decides */
} memest_search_request;

typedef struct memest_search_entry {
  uint32_t struct_size;
  /* the layout (memest_layout's fields; kept flat so that the entry can grow) */
  int64_t tp;
  int64_t cp;
  int64_t pp;
  int64_t vpp;
  int64_t micro_batch;
  int32_t recompute;          /* memest_recompute */
  int32_t zero;               /* 0..3 */
  int64_t dp;
  int64_t num_microbatches;
  double estimate_bytes;     /* 4D paper Eq. 18 */
  double peak_bytes;         /* overhead model, most loaded stage */
  int32_t oom_predicted;
  int32_t verdict;           /* paper bands on estimate_bytes */
  double capacity_bytes;
  double tflops_per_gpu;     /* predicted model TFLOP/s per GPU */
  double tokens_per_s;       /* whole job */
  double step_seconds;       /* per iteration */
  double bubble_fraction;    /* (p - 1) / (vpp * m) */
  int64_t first_stage_layers; /* layers of the first and the last pipeline stage (the others */
  int64_t last_stage_layers;  /* hold ceil(layers / pp)) */
  /* appended in 1.1 */
  int32_t peak_verdict;       /* memest_verdict on peak_bytes (MEMEST_PEAK_FITS_FRACTION) */
  /* appended in 1.2 */
  int64_t ep;                 /* expert-parallel size */
  int64_t etp;                /* expert tensor-parallel size in effect */
  int64_t edp;                /* expert data-parallel size */
  /* appended in 1.5 */
  int32_t fp8;                /* the entry's fp8 setting (searched with fp8_options) */
  int32_t compile;            /* memest_compile (searched with compile_options) */
  int32_t tie;                /* 1: within the search's tie_margin of the best entry's tokens/s:
                                 the model cannot tell it apart from the best */
  double gap_to_best;         /* 1 - tokens_per_s / the best entry's (0 for the best) */
  double mfu;
  double compute_seconds;     /* memest_step_part, seconds per iteration: */
  double recompute_seconds;
  double bubble_seconds;
  double tp_comm_seconds;
  double cp_comm_seconds;
  double dp_comm_seconds;
  double pp_comm_seconds;
  double ep_comm_seconds;
  double optimizer_seconds;
  double offload_seconds;
  /* appended in 1.6 */
  double oom_probability;     /* as in memest_pretrain_result */
  double margin_bytes;        /* capacity_bytes - peak_bytes */
  double peak_high_bytes;     /* the upper end of the peak's 90 % band */
} memest_search_entry;

typedef struct memest_search_result {
  uint32_t struct_size;
  uint64_t candidates;       /* layouts considered */
  uint64_t evaluated;        /* layouts whose memory and throughput were estimated */
  uint64_t pruned_total;     /* layouts dropped, all reasons together */
  uint32_t count;            /* entries written, best first */
  uint64_t ranked;           /* layouts that could be ranked (count is min(ranked, capacity)) */
  /* appended in 1.5 */
  double tie_margin;         /* relative tokens/s difference below which entries are ties: the
                                model's measured ranking error (README "Throughput model") */
} memest_search_result;

/** Fills defaults (no base request, max_vpp 4, all recompute options, ZeRO 1, tp within a
 *  node, no explicit layouts, uneven pipelines allowed). Pass sizeof *request. */
MEMEST_API memest_status memest_search_request_init(memest_search_request *request,
                                                    uint32_t struct_size);

/** Ranks layouts by predicted throughput among those predicted to fit; writes the best
 *  `entry_capacity` into the caller's array `entries` (elements `entry_size` bytes apart:
 *  sizeof(memest_search_entry) as the caller was compiled; deterministic order: faster first,
 *  then less memory, then smaller tp, cp, pp, vpp, micro-batch), and the number of layouts
 *  dropped per memest_prune_reason into `pruned` (up to `pruned_capacity` counts; NULL when
 *  0). A search with no layout that fits succeeds with count 0; the pruned counts say why.
 *  On failure nothing is written. */
MEMEST_API memest_status memest_search(const memest_search_request *request,
                                       memest_search_result *result, memest_search_entry *entries,
                                       uint32_t entry_size, uint32_t entry_capacity,
                                       uint64_t *pruned, uint32_t pruned_capacity);

/* ======================================================================== */
/* Section: fine-tuning mode (LLMem)                                         */
/* ======================================================================== */

/** Distributed fine-tuning methods of LLMem (Kim et al.), with its Algorithm 1 as AUTO. */
typedef enum memest_finetune_method {
  MEMEST_FINETUNE_CDP = 0,         /* conventional data parallelism: whole model per GPU */
  MEMEST_FINETUNE_ZERO3 = 1,       /* advanced DP (ZeRO-3): params gathered for compute */
  MEMEST_FINETUNE_TP = 2,          /* 1D tensor parallelism over every GPU */
  MEMEST_FINETUNE_DP_TP = 3,       /* ZeRO-3 data parallelism across TP groups */
  MEMEST_FINETUNE_CPU_OFFLOAD = 4, /* only as a selection: nothing fits on the GPUs */
  MEMEST_FINETUNE_AUTO = 5,        /* request only: run Algorithm 1 */
  MEMEST_FINETUNE_METHOD_COUNT = 6
} memest_finetune_method;

/** Returns "cdp", "zero3", "tp", "dp+tp", "cpu_offload", "auto", or "unknown". */
MEMEST_API const char *memest_finetune_method_name(memest_finetune_method method);

typedef struct memest_finetune_request {
  uint32_t struct_size;
  const memest_model *model;      /* required */
  const memest_gpu *gpu;          /* required: capacity; context_bytes and page_bytes are
                                     m_base, cu_p */
  int64_t gpus;                   /* gpu_n */
  int32_t method;                 /* memest_finetune_method */
  int64_t tp;                     /* DP+TP: tensor-parallel size (0 = best for AUTO) */
  int64_t batch;                  /* per-GPU batch size bs (ignored by AUTO) */
  int64_t seq_len;                /* sl */
  int32_t gradient_checkpointing; /* 1 (default): keep layer and embedding outputs only */
  int32_t flash_attention;        /* without checkpointing: 0 (default) keeps attention scores */
  double param_bytes;             /* B16: 2 for fp16 or bf16 */
  double base_bytes;              /* m_base override; < 0 (default) uses gpu.context_bytes */
  double page_bytes;              /* cu_p override; 0 (default) uses gpu.page_bytes */
  double chunk_bytes;             /* chunk size x B16 override; 0 (default) searches */
} memest_finetune_request;

/** LLMem's terms, in bytes per GPU for the method at hand (Sec. 4.2 and 5). */
typedef struct memest_finetune_parts {
  double base;            /* m_base: CUDA context and framework init */
  double params;          /* m_p: fp16 + fp32 parameters (chunked transformer + embedding) */
  double params_fp16;     /* m_p,16 */
  double params_fp32;     /* m_p,32 */
  double optimizer;       /* m_os: fp32 momentum + variance, per Embedding/Linear tensor */
  double outputs;         /* m_out: kept layer/embedding outputs */
  double lm_head;         /* m_lm: logits, shifted logits, loss, LM head weights */
  double backward_buffer; /* m_back^tp: TP backward all-gather buffer */
} memest_finetune_parts;

typedef struct memest_finetune_result {
  uint32_t struct_size;
  int32_t method;            /* memest_finetune_method */
  int64_t tp;
  int64_t dp;
  int64_t batch;
  double num_parameters;
  memest_finetune_parts parts;   /* LLMem's single-GPU terms (before any division by gpu_n) */
  memest_finetune_parts per_gpu; /* what each term adds on one GPU under the method; peak_bytes
                                    = base + params + optimizer + outputs + lm_head +
                                    backward_buffer (params_fp16/_fp32 itemise params) */
  double peak_bytes;         /* LLMem's peak for the method: the estimate */
  double capacity_bytes;
  double usage_fraction;
  int32_t verdict;           /* FITS when peak <= capacity, else OOM (LLMem's own test) */
  double chunk_elements;     /* cs, as searched or given */
  double chunk_count;        /* chunks the transformer parameters are packed into */
  double chunk_waste_bytes;  /* fp16 + fp32 bytes of chunk space holding no parameter */
  /* appended in 1.11 */
  int32_t peak_verdict;      /* the verdict front ends headline, with the margin of every mode:
                                FITS up to MEMEST_PEAK_FITS_FRACTION of capacity, TIGHT up to
                                capacity, else OOM */
} memest_finetune_result;

typedef struct memest_finetune_option {
  uint32_t struct_size;
  int32_t method;      /* memest_finetune_method */
  int32_t applicable;  /* 0 when the GPU count or heads rule the method out */
  int64_t tp;
  int64_t dp;
  int64_t max_batch;   /* largest batch that fits (0: even batch 1 does not) */
  double score;        /* Algorithm 1's performance score */
  double peak_bytes;   /* at max_batch (at batch 1 when max_batch is 0) */
} memest_finetune_option;

typedef struct memest_finetune_choice {
  uint32_t struct_size;
  int32_t selected;                  /* a method, or MEMEST_FINETUNE_CPU_OFFLOAD */
  int64_t batch;                     /* the selected method's max batch (0 for offload) */
  uint32_t option_count;             /* options considered (4: CDP, ZeRO-3, TP, DP+TP) */
} memest_finetune_choice;

/** Fills defaults (no model or GPU, 1 GPU, method CDP, batch 1, sequence 512, checkpointing
 *  on, fp16). Pass sizeof *request. */
MEMEST_API memest_status memest_finetune_request_init(memest_finetune_request *request,
                                                      uint32_t struct_size);

/** LLMem's peak for one method at the request's batch. AUTO is refused here; use
 *  memest_finetune_select. */
MEMEST_API memest_status memest_finetune(const memest_finetune_request *request,
                                         memest_finetune_result *result);

/** LLMem Algorithm 1: the method chosen into *choice, and the largest batch and score per
 *  method into the caller's array `options` (elements `option_size` bytes apart, up to
 *  `option_capacity`, in Algorithm 1's order CDP, ZeRO-3, TP, DP+TP; NULL when 0).
 *  On failure nothing is written. */
MEMEST_API memest_status memest_finetune_select(const memest_finetune_request *request,
                                                memest_finetune_choice *choice,
                                                memest_finetune_option *options,
                                                uint32_t option_size, uint32_t option_capacity);

/* ======================================================================== */
/* Section: JSON entry point                                                 */
/* ======================================================================== */

/** Answers a JSON request (see README: "mode" is "pretrain", "model_states", "finetune" or
 *  "search") with a
 *  JSON response. On success returns MEMEST_OK and sets *response_json to {"ok": true, ...}.
 *  On a bad request returns its status AND sets *response_json to
 *  {"ok": false, "error": {"code", "field", "message"}}. The caller frees *response_json
 *  with memest_string_free. *response_json is left untouched only when response_json is
 *  NULL or memory runs out. */
MEMEST_API memest_status memest_request_json(const char *request_json, char **response_json);

/** Frees a string returned by memest. NULL is accepted. */
MEMEST_API void memest_string_free(char *string);

#ifdef __cplusplus
}
#endif

#endif /* MEMEST_MEMEST_H */

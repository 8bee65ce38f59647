package memest

/*
#include <stdlib.h>
#include <memest/memest.h>
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Recompute choices (memest_recompute; their names: EnumNames(EnumRecompute)).
const (
	RecomputeNone      = int(C.MEMEST_RECOMPUTE_NONE)
	RecomputeSelective = int(C.MEMEST_RECOMPUTE_SELECTIVE)
	RecomputeFull      = int(C.MEMEST_RECOMPUTE_FULL)
	// RecomputeOpSelective is torchtitan's per-op policy (fsdp, deepspeed, pytorch only).
	RecomputeOpSelective = int(C.MEMEST_RECOMPUTE_OP_SELECTIVE)
)

// Training stacks (memest_framework; their names: EnumNames(EnumFramework)).
const (
	FrameworkMegatron  = int(C.MEMEST_FRAMEWORK_MEGATRON)
	FrameworkFSDP      = int(C.MEMEST_FRAMEWORK_FSDP)
	FrameworkDeepSpeed = int(C.MEMEST_FRAMEWORK_DEEPSPEED)
	FrameworkPyTorch   = int(C.MEMEST_FRAMEWORK_PYTORCH)
	// Since 1.6: FSDP1 FullyShardedDataParallel (FlatParameters): FSDP plus its root unit kept
	// unsharded between forward and backward, and unsharded gradients under no_sync.
	FrameworkFSDP1 = int(C.MEMEST_FRAMEWORK_FSDP1)
)

// Losses (memest_loss; their names: EnumNames(EnumLoss)).
const (
	LossAuto        = int(C.MEMEST_LOSS_AUTO)
	LossFused       = int(C.MEMEST_LOSS_FUSED)
	LossUnfused     = int(C.MEMEST_LOSS_UNFUSED)
	LossChunked     = int(C.MEMEST_LOSS_CHUNKED)
	LossLinearFused = int(C.MEMEST_LOSS_LINEAR_FUSED)
	// Since 1.4: F.cross_entropy on the model's shifted 16-bit logits without an upcast.
	LossUnfused16Bit = int(C.MEMEST_LOSS_UNFUSED_16BIT)
	// Since 1.9: LitGPT's LM head output kept as chunks of 128 tokens (chunked_cross_entropy),
	// and torchtitan's ChunkedLossWrapper (the LM head and the loss one chunk at a time); their
	// chunks: PretrainRequest.LossChunks.
	LossChunkedLMHead = int(C.MEMEST_LOSS_CHUNKED_LM_HEAD)
	LossChunkedLinear = int(C.MEMEST_LOSS_CHUNKED_LINEAR)
	// Since 1.10: flash-attn's CrossEntropyLoss (llm-foundry's fused_crossentropy).
	LossFlashAttn = int(C.MEMEST_LOSS_FLASH_ATTN)
)

// What torch.compile compiles (memest_compile, the values of PretrainRequest.CompileParts; their
// names: EnumNames(EnumCompile)). CompileAll is what Compile = true sends.
const (
	CompileNone  = int(C.MEMEST_COMPILE_NONE)
	CompileAll   = int(C.MEMEST_COMPILE_ALL)   // each block and the loss
	CompileModel = int(C.MEMEST_COMPILE_MODEL) // each block, the loss eager
	CompileLoss  = int(C.MEMEST_COMPILE_LOSS)  // the loss alone
)

// Communication overlapped with compute (memest_overlap, 1.5; their names:
// EnumNames(EnumOverlap)): PretrainRequest.CommOverlap holds bit (1 << value) per kind, or
// OverlapStackDefault (what the training stack overlaps by itself, the default).
const (
	OverlapDP           = int(C.MEMEST_OVERLAP_DP)
	OverlapTP           = int(C.MEMEST_OVERLAP_TP)
	OverlapPP           = int(C.MEMEST_OVERLAP_PP)
	OverlapEP           = int(C.MEMEST_OVERLAP_EP)
	OverlapStackDefault = int(C.MEMEST_OVERLAP_STACK_DEFAULT)
)

// OverlapBits is PretrainRequest.CommOverlap for overlap names (EnumNames(EnumOverlap)); an
// unknown name is an *Error (ErrInvalidArgument) naming training.comm_overlap. No names: none.
func OverlapBits(names ...string) (int, error) {
	bits := 0
	for _, name := range names {
		v := EnumValue(EnumOverlap, name)
		if v < 0 {
			return 0, ownError(ErrInvalidArgument, "training.comm_overlap",
				fmt.Sprintf("training.comm_overlap: unknown name %q (%v)", name, EnumNames(EnumOverlap)))
		}
		bits |= 1 << v
	}
	return bits, nil
}

// Megatron-Core's recompute modules (memest_recompute_module, 1.11; their names, Megatron's
// --recompute-modules spellings: EnumNames(EnumRecomputeModule)): PretrainRequest.RecomputeModules
// holds bit (1 << value) per module selective recomputation checkpoints under FrameworkMegatron;
// 0 (the default) is Megatron's own, core_attn alone.
const (
	RecomputeModuleCoreAttn      = int(C.MEMEST_RECOMPUTE_MODULE_CORE_ATTN)
	RecomputeModuleMoeAct        = int(C.MEMEST_RECOMPUTE_MODULE_MOE_ACT)
	RecomputeModuleLayernorm     = int(C.MEMEST_RECOMPUTE_MODULE_LAYERNORM)
	RecomputeModuleMLAUpProj     = int(C.MEMEST_RECOMPUTE_MODULE_MLA_UP_PROJ)
	RecomputeModuleMLP           = int(C.MEMEST_RECOMPUTE_MODULE_MLP)
	RecomputeModuleMoe           = int(C.MEMEST_RECOMPUTE_MODULE_MOE)
	RecomputeModuleSharedExperts = int(C.MEMEST_RECOMPUTE_MODULE_SHARED_EXPERTS)
)

// RecomputeModuleBits is PretrainRequest.RecomputeModules for module names
// (EnumNames(EnumRecomputeModule)); an unknown name is an *Error (ErrInvalidArgument) naming
// training.recompute_modules[i], as the JSON request's list is refused. No names: 0, Megatron's
// default (core_attn).
func RecomputeModuleBits(names ...string) (uint32, error) {
	var bits uint32
	for i, name := range names {
		v := EnumValue(EnumRecomputeModule, name)
		if v < 0 {
			field := fmt.Sprintf("training.recompute_modules[%d]", i)
			return 0, ownError(ErrInvalidArgument, field,
				fmt.Sprintf("%s: unknown name %q (%v)", field, name, EnumNames(EnumRecomputeModule)))
		}
		bits |= 1 << uint(v)
	}
	return bits, nil
}

// The copy of the weights the optimizer updates beside the weights the model computes with
// (memest_master_weights, 1.15; their names: EnumNames(EnumMasterWeights)): the values of
// PretrainRequest.MasterWeights, as Megatron-Core's --main-params-dtype and
// store_param_remainders and Apex's DistributedFusedAdam (NeMo's optim.dtype) store it.
const (
	MasterAuto      = int(C.MEMEST_MASTER_AUTO)      // the framework's (default): fp32 under megatron and deepspeed, else none
	MasterFP32      = int(C.MEMEST_MASTER_FP32)      // an fp32 copy: 4 bytes per parameter
	MasterBF16      = int(C.MEMEST_MASTER_BF16)      // a bf16 copy (DistributedFusedAdam over fp8 weights)
	MasterFP16      = int(C.MEMEST_MASTER_FP16)      // an fp16 copy (--main-params-dtype fp16)
	MasterRemainder = int(C.MEMEST_MASTER_REMAINDER) // the 16 bits fp32 has beyond bf16 weights: 2 bytes
	MasterNone      = int(C.MEMEST_MASTER_NONE)      // none: the optimizer steps the weights themselves
)

// How an MoE layer moves its tokens between expert-parallel ranks (memest_moe_dispatcher,
// 1.5; their names: EnumNames(EnumMoeDispatcher)): the values of PretrainRequest.MoeDispatcher.
const (
	MoeDispatcherAllToAll = int(C.MEMEST_MOE_DISPATCHER_ALLTOALL)
	MoeDispatcherDeepEP   = int(C.MEMEST_MOE_DISPATCHER_DEEPEP)
)

// Which attention kernels run (memest_attention_kernel, 1.5; their names:
// EnumNames(EnumAttentionKernel)): the values of PretrainRequest.AttentionKernel.
const (
	AttentionAuto   = int(C.MEMEST_ATTENTION_AUTO)   // by framework: megatron fused, the others flash2
	AttentionFlash2 = int(C.MEMEST_ATTENTION_FLASH2) // FlashAttention-2 (gpu.fa2_attention_efficiency)
	AttentionFused  = int(C.MEMEST_ATTENTION_FUSED)  // the GPU's best fused kernels (cuDNN, FA3)
	AttentionTriton = int(C.MEMEST_ATTENTION_TRITON) // 1.17: a Triton FlashAttention kernel (llm-foundry MPT)
)

// Parts of a training step's time (memest_step_part, 1.5; their names:
// EnumNames(EnumStepPart)): the indices of Throughput.Parts.
const (
	StepCompute   = int(C.MEMEST_STEP_COMPUTE)
	StepRecompute = int(C.MEMEST_STEP_RECOMPUTE)
	StepBubble    = int(C.MEMEST_STEP_BUBBLE)
	StepTPComm    = int(C.MEMEST_STEP_TP_COMM)
	StepCPComm    = int(C.MEMEST_STEP_CP_COMM)
	StepDPComm    = int(C.MEMEST_STEP_DP_COMM)
	StepPPComm    = int(C.MEMEST_STEP_PP_COMM)
	StepEPComm    = int(C.MEMEST_STEP_EP_COMM)
	StepOptimizer = int(C.MEMEST_STEP_OPTIMIZER)
	StepOffload   = int(C.MEMEST_STEP_OFFLOAD)
	StepPartCount = int(C.MEMEST_STEP_PART_COUNT)
)

// Throughput is the throughput model's answer (1.5; zeros when no global batch is given): the
// step time per iteration, tokens/s of the job, model TFLOP/s per GPU, MFU, and the step's
// parts in seconds (Parts[StepCompute], ...), which add up to StepSeconds.
type Throughput struct {
	StepSeconds, TokensPerS, TFLOPSPerGPU, MFU float64
	Parts                                      [StepPartCount]float64
}

// Breakdown is the step's parts by the library's names (EnumNames(EnumStepPart)).
func (t Throughput) Breakdown() map[string]float64 {
	out := map[string]float64{}
	for i, name := range EnumNames(EnumStepPart) {
		if i < len(t.Parts) {
			out[name] = t.Parts[i]
		}
	}
	return out
}

func pretrainThroughput(r *C.memest_pretrain_result) Throughput {
	t := Throughput{StepSeconds: float64(r.step_seconds), TokensPerS: float64(r.tokens_per_s),
		TFLOPSPerGPU: float64(r.tflops_per_gpu), MFU: float64(r.mfu)}
	t.Parts[StepCompute], t.Parts[StepRecompute] = float64(r.compute_seconds), float64(r.recompute_seconds)
	t.Parts[StepBubble], t.Parts[StepTPComm] = float64(r.bubble_seconds), float64(r.tp_comm_seconds)
	t.Parts[StepCPComm], t.Parts[StepDPComm] = float64(r.cp_comm_seconds), float64(r.dp_comm_seconds)
	t.Parts[StepPPComm], t.Parts[StepEPComm] = float64(r.pp_comm_seconds), float64(r.ep_comm_seconds)
	t.Parts[StepOptimizer], t.Parts[StepOffload] = float64(r.optimizer_seconds), float64(r.offload_seconds)
	return t
}

// Optimizers (memest_optimizer; their names: EnumNames(EnumOptimizer)).
const (
	OptimizerAdam           = int(C.MEMEST_OPTIMIZER_ADAM)
	OptimizerAdamW          = int(C.MEMEST_OPTIMIZER_ADAMW)
	OptimizerAdamW8bit      = int(C.MEMEST_OPTIMIZER_ADAMW_8BIT)
	OptimizerPagedAdamW8bit = int(C.MEMEST_OPTIMIZER_PAGED_ADAMW_8BIT)
	OptimizerSGDMomentum    = int(C.MEMEST_OPTIMIZER_SGD_MOMENTUM)
	OptimizerSGD            = int(C.MEMEST_OPTIMIZER_SGD)
	// Since 1.6: torch.optim.AdamW's default multi-tensor step (adamw's states plus one
	// moment-sized temporary during step()), and bitsandbytes' PagedAdamW32bit (fp32 states in
	// CUDA managed memory: Stage.PagedBytes).
	OptimizerAdamWForeach    = int(C.MEMEST_OPTIMIZER_ADAMW_FOREACH)
	OptimizerPagedAdamW32bit = int(C.MEMEST_OPTIMIZER_PAGED_ADAMW_32BIT)
)

// The peak's error model (1.6): PeakErrorSigma is the standard deviation of ln(measured /
// predicted) where memest was not fitted, from which PretrainResult.PeakLowBytes/PeakHighBytes
// (the 90 % band) and OOMProbability come; PeakFitsFraction is the share of capacity up to
// which the headline verdict says "fits"; SearchMaxOOMProbability the search's default
// search.max_oom_probability (JSON requests).
const (
	PeakErrorSigma          = float64(C.MEMEST_PEAK_ERROR_SIGMA)
	PeakFitsFraction        = float64(C.MEMEST_PEAK_FITS_FRACTION)
	SearchMaxOOMProbability = float64(C.MEMEST_SEARCH_MAX_OOM_PROBABILITY)
)

// Autocast and NoSync (1.6) and DDP (1.7) values of PretrainRequest besides 0 (off) and 1 (on):
// the training stack's own default.
const StackDefault = -1

// OptimizerBytesDerive as PretrainRequest.OptimizerBytes asks the library to derive the
// optimizer's bytes per parameter from Optimizer, Framework and ParamBytes (as JSON requests do
// unless they give optimizer_bytes); the typed default stays 12 (Adam with an fp32 master).
const OptimizerBytesDerive = float64(C.MEMEST_OPTIMIZER_BYTES_DERIVE)

// GradBytesDerive as PretrainRequest.GradBytes (1.11) asks the library for the framework's
// gradient dtype: 4 under megatron and deepspeed, ParamBytes under fsdp, fsdp1 and pytorch (torch
// keeps .grad like the parameter), as a JSON request without grad_dtype gets.
const GradBytesDerive = float64(C.MEMEST_GRAD_BYTES_DERIVE)

// Fine-tuning methods (memest_finetune_method; their names: EnumNames(EnumFinetuneMethod)).
const (
	MethodCDP        = int(C.MEMEST_FINETUNE_CDP)
	MethodZero3      = int(C.MEMEST_FINETUNE_ZERO3)
	MethodTP         = int(C.MEMEST_FINETUNE_TP)
	MethodDPTP       = int(C.MEMEST_FINETUNE_DP_TP)
	MethodCPUOffload = int(C.MEMEST_FINETUNE_CPU_OFFLOAD)
	MethodAuto       = int(C.MEMEST_FINETUNE_AUTO)
)

// MethodName is memest_finetune_method_name ("zero3", "dp+tp", ...).
func MethodName(method int) string {
	return C.GoString(C.memest_finetune_method_name(C.memest_finetune_method(method)))
}

// ---- pretraining --------------------------------------------------------

// PretrainRequest is memest_pretrain_request. NewPretrainRequest fills the library's defaults.
type PretrainRequest struct {
	Model                                 *Model
	GPU                                   *GPU
	GPUs, TP, CP, PP, VPP                 int64
	SequenceParallel                      bool
	Zero                                  int
	SeqLen, MicroBatch, GlobalBatch       int64
	Recompute                             int
	FlashAttention                        bool
	ActivationModel                       int
	ParamBytes, GradBytes, OptimizerBytes float64
	UnevenPipeline                        bool // lighter first and last stages when pp does not divide the layers
	// The training stack (appended in 1.2; docs/training-stack.md): the library checks each
	// value and combination and names the field of a refused one ("training.recompute").
	Framework           int   // FrameworkMegatron (default), FrameworkFSDP, ...
	Optimizer           int   // OptimizerAdam (default), ...: decides K when OptimizerBytes < 0
	OptimizerInBackward bool  // torchtune's per-parameter step during backward (fsdp, pytorch)
	RecomputeEvery      int64 // one block in N checkpointed (default 1)
	Loss                int   // LossAuto (default: by framework), ...
	FP8, Compile        bool  // Compile: torch.compile of the blocks and the loss (CompileAll)
	CompileParts        int   // CompileNone (default: Compile decides), CompileAll, CompileModel, CompileLoss; wins over Compile
	OffloadOptimizer    bool  // optimizer states and fp32 masters in host memory
	OffloadParams       bool  // sharded parameters in host memory (fsdp zero 2/3, deepspeed zero 3)
	OffloadActivations  bool  // saved activations in host memory, one layer staged
	// framework buckets; 0 = the framework's documented default
	DDPBucketMiB, DSReduceBucketSize, DSAllgatherBucketSize, DSPrefetchBucketSize float64
	DSMaxLiveParameters, DSParamPersistenceThreshold                              float64
	DDPGradientAsBucketView                                                       bool
	// Expert parallelism (mixture-of-experts models): EP experts' ranks, ETP expert tensor
	// parallel (0 = TP), MoeCapacityFactor (0 = drop-less); LastStageLayers (0 = automatic).
	// Under FrameworkFSDP (1.7) EP > 1 is torchtitan's expert parallelism (ETP 0 or 1).
	EP, ETP           int64
	MoeCapacityFactor float64
	LastStageLayers   int64
	// Uneven and custom pipelines (1.7): FirstStageLayers, the first stage's layers (Megatron's
	// --decoder-first-pipeline-num-layers; 0 = none); PipelineLayout, Megatron's
	// --pipeline-model-parallel-layout ("Et*3|(tt|)*29,m|L"; "" = none; VPP must equal its
	// virtual stages / PP). Pretrain passes the string as a C copy it frees after the call.
	FirstStageLayers int64
	PipelineLayout   string
	// Communication hidden behind compute in the step time (1.5): OverlapStackDefault (the
	// default) or bit (1 << OverlapDP, ...) per kind (OverlapBits("dp", "tp")).
	CommOverlap int
	// How MoE tokens cross expert-parallel ranks in the step time (1.5): MoeDispatcherAllToAll
	// (the default) or MoeDispatcherDeepEP.
	MoeDispatcher int
	// Which attention kernels run in the step time (1.5): AttentionAuto (the default: megatron
	// fused, the other frameworks flash2), AttentionFlash2, AttentionFused or AttentionTriton
	// (1.17).
	AttentionKernel int
	// The precision policy and the loss beside the stored dtypes (1.6). ReduceBytes: bytes per
	// element of the gradient reduction (FSDP's reduce_dtype: 4, 2; 0 = GradBytes, the
	// default). LossParallel (default true): under TP > 1 the loss works on vocab-parallel
	// logits; false gathers them first. Autocast: StackDefault (-1, the default: fp32
	// parameters outside FSDP run under torch.autocast), 0 or 1. FP8AllGather: FSDP2 gathers
	// fp8 weights (needs FP8). NoSync: StackDefault (-1, the default: fsdp1 keeps unsharded
	// gradients across accumulation micro-batches, the others reduce every one), 0 or 1.
	// LogitsHeld: the loop keeps the model's output through backward. (The adapter's
	// quantize_lm_head, like the other adapter fields, is a JSON request's
	// training.adapter.quantize_lm_head.)
	ReduceBytes  float64
	LossParallel bool
	Autocast     int
	FP8AllGather bool
	NoSync       int
	LogitsHeld   bool
	// DistributedDataParallel around the model (1.7; JSON training.ddp): StackDefault (-1, the
	// default: DDP wraps the model when the data-parallel size is above 1), 1 (also on one
	// process: torchrun with DDP around one GPU, so DDP's gradient buckets are counted) or 0
	// (one GPU, not wrapped). A bucket size (DDPBucketMiB) alone no longer wraps one process.
	// Read under FrameworkPyTorch and FrameworkFSDP at Zero 0-1 only; elsewhere, or 0 with more
	// than one data-parallel rank, the library refuses naming "training.ddp".
	DDP int
	// The 1.9 fields (JSON training.loss_chunks, fsdp_use_orig_params, fp4). LossChunks: the
	// chunks of a chunked loss (LossChunked, LossChunkedLMHead, LossChunkedLinear); 0 (the
	// default): the loss's own (8; LitGPT's ceil(SeqLen / 128)); refused naming
	// "training.loss_chunks" for another loss, below 0 or above the tokens. FSDPUseOrigParams:
	// FrameworkFSDP1 with a LoRA adapter in the parameters' dtype (a JSON request's
	// training.adapter), zero 2/3: each block's FlatParameter holds its frozen weights with the
	// adapters (use_orig_params=True with a policy wrapping whole blocks: LitGPT's Fabric
	// FSDPStrategy, accelerate's TRANSFORMER_BASED_WRAP), so the frozen weights get a gradient
	// too; elsewhere refused naming "training.fsdp_use_orig_params". FP4: NVFP4 linear layers
	// (Transformer Engine NVFP4BlockScaling, Megatron-LM --fp4-format e2m1) under
	// FrameworkMegatron with FP8 off on a GPU whose FP4() is 1 (B200, GB200); elsewhere refused
	// naming "training.fp4".
	LossChunks        int
	FSDPUseOrigParams bool
	FP4               bool
	// Megatron-Core's recompute modules (1.11; JSON training.recompute_modules): bit
	// (1 << RecomputeModuleMoe, ...) per module recompute SELECTIVE checkpoints under
	// FrameworkMegatron (RecomputeModuleBits("layernorm", "moe")); 0 (the default): core_attn
	// alone, Megatron's default. Refused naming "training.recompute_modules" under another
	// framework, for an MoE module on a dense model, mla_up_proj without latent attention or a
	// bit past the last module.
	RecomputeModules uint32
	// Liger-Kernel's fused RMSNorm and SwiGLU/GeGLU kernels in the Hugging Face blocks (1.12;
	// JSON training.use_liger_kernel): fewer saved activations under FrameworkPyTorch,
	// FrameworkDeepSpeed, FrameworkFSDP and FrameworkFSDP1 (docs/stack-activations.md). Refused
	// naming "training.use_liger_kernel" under FrameworkMegatron, for LayerNorm models and
	// hybrids.
	UseLigerKernel bool
	// How the optimizer stores what it updates (1.15), the parts of a derived K (OptimizerBytes =
	// OptimizerBytesDerive). MasterWeights (JSON training.master_weights): MasterAuto (the
	// default), MasterFP32, MasterBF16, MasterFP16, MasterRemainder or MasterNone; other than
	// MasterAuto only under FrameworkMegatron and FrameworkDeepSpeed. OptimizerStateBytes (JSON
	// training.optimizer_state_dtype): bytes per element of the optimizer's moments, 4, 2 or 1
	// (Megatron-Core's --exp-avg-dtype, NeMo's optim.dtype); 0 (the default): fp32 beside a
	// master, else the weights' dtype. Either beside a K given whole, a master another framework
	// does not keep or a value past the last is refused naming "training.master_weights" /
	// "training.optimizer_state_dtype"; so is a moments' dtype for OptimizerSGD or
	// OptimizerAdamW8bit.
	MasterWeights       int
	OptimizerStateBytes float64
}

func (r *PretrainRequest) toC() C.memest_pretrain_request {
	var c C.memest_pretrain_request
	C.memest_pretrain_request_init(&c, C.uint32_t(unsafe.Sizeof(c)))
	c.gpus, c.tp, c.cp, c.pp, c.vpp = C.int64_t(r.GPUs), C.int64_t(r.TP), C.int64_t(r.CP), C.int64_t(r.PP), C.int64_t(r.VPP)
	c.sequence_parallel, c.zero = boolInt(r.SequenceParallel), C.int32_t(r.Zero)
	c.seq_len, c.micro_batch, c.global_batch = C.int64_t(r.SeqLen), C.int64_t(r.MicroBatch), C.int64_t(r.GlobalBatch)
	c.recompute, c.flash_attention, c.activation_model = C.int32_t(r.Recompute), boolInt(r.FlashAttention), C.int32_t(r.ActivationModel)
	c.param_bytes, c.grad_bytes, c.optimizer_bytes = C.double(r.ParamBytes), C.double(r.GradBytes), C.double(r.OptimizerBytes)
	c.uneven_pipeline = boolInt(r.UnevenPipeline)
	c.framework, c.optimizer, c.optimizer_in_backward = C.int32_t(r.Framework), C.int32_t(r.Optimizer), boolInt(r.OptimizerInBackward)
	c.recompute_every, c.loss, c.fp8, c.compile = C.int64_t(r.RecomputeEvery), C.int32_t(r.Loss), boolInt(r.FP8), boolInt(r.Compile)
	if r.CompileParts != CompileNone {
		c.compile = C.int32_t(r.CompileParts)
	}
	c.offload_optimizer, c.offload_params, c.offload_activations = boolInt(r.OffloadOptimizer), boolInt(r.OffloadParams), boolInt(r.OffloadActivations)
	c.ddp_bucket_mib, c.ds_reduce_bucket_size = C.double(r.DDPBucketMiB), C.double(r.DSReduceBucketSize)
	c.ds_allgather_bucket_size, c.ds_prefetch_bucket_size = C.double(r.DSAllgatherBucketSize), C.double(r.DSPrefetchBucketSize)
	c.ds_max_live_parameters, c.ds_param_persistence_threshold = C.double(r.DSMaxLiveParameters), C.double(r.DSParamPersistenceThreshold)
	c.ddp_gradient_as_bucket_view = boolInt(r.DDPGradientAsBucketView)
	c.ep, c.etp, c.moe_capacity_factor = C.int64_t(r.EP), C.int64_t(r.ETP), C.double(r.MoeCapacityFactor)
	c.last_stage_layers, c.first_stage_layers = C.int64_t(r.LastStageLayers), C.int64_t(r.FirstStageLayers)
	c.comm_overlap, c.moe_dispatcher = C.int32_t(r.CommOverlap), C.int32_t(r.MoeDispatcher)
	c.attention_kernel = C.int32_t(r.AttentionKernel)
	c.reduce_bytes, c.loss_parallel, c.autocast = C.double(r.ReduceBytes), boolInt(r.LossParallel), C.int32_t(r.Autocast)
	c.fp8_all_gather, c.no_sync, c.logits_held = boolInt(r.FP8AllGather), C.int32_t(r.NoSync), boolInt(r.LogitsHeld)
	c.ddp = C.int32_t(r.DDP)
	c.loss_chunks, c.fsdp_use_orig_params, c.fp4 = C.int32_t(r.LossChunks), boolInt(r.FSDPUseOrigParams), boolInt(r.FP4)
	c.recompute_modules = C.uint32_t(r.RecomputeModules)
	c.use_liger_kernel = boolInt(r.UseLigerKernel)
	c.master_weights, c.optimizer_state_bytes = C.int32_t(r.MasterWeights), C.double(r.OptimizerStateBytes)
	return c
}

// NewPretrainRequest returns a request holding memest_pretrain_request_init's defaults.
func NewPretrainRequest(model *Model, gpu *GPU) *PretrainRequest {
	var c C.memest_pretrain_request
	C.memest_pretrain_request_init(&c, C.uint32_t(unsafe.Sizeof(c)))
	return &PretrainRequest{
		Model: model, GPU: gpu, GPUs: int64(c.gpus), TP: int64(c.tp), CP: int64(c.cp),
		PP: int64(c.pp), VPP: int64(c.vpp), SequenceParallel: c.sequence_parallel != 0,
		Zero: int(c.zero), SeqLen: int64(c.seq_len), MicroBatch: int64(c.micro_batch),
		GlobalBatch: int64(c.global_batch), Recompute: int(c.recompute),
		FlashAttention: c.flash_attention != 0, ActivationModel: int(c.activation_model),
		ParamBytes: float64(c.param_bytes), GradBytes: float64(c.grad_bytes),
		OptimizerBytes: float64(c.optimizer_bytes), UnevenPipeline: c.uneven_pipeline != 0,
		Framework: int(c.framework), Optimizer: int(c.optimizer),
		OptimizerInBackward: c.optimizer_in_backward != 0, RecomputeEvery: int64(c.recompute_every),
		Loss: int(c.loss), FP8: c.fp8 != 0, Compile: c.compile == C.MEMEST_COMPILE_ALL,
		CompileParts:     int(c.compile),
		OffloadOptimizer: c.offload_optimizer != 0, OffloadParams: c.offload_params != 0,
		OffloadActivations: c.offload_activations != 0,
		DDPBucketMiB:       float64(c.ddp_bucket_mib), DSReduceBucketSize: float64(c.ds_reduce_bucket_size),
		DSAllgatherBucketSize:       float64(c.ds_allgather_bucket_size),
		DSPrefetchBucketSize:        float64(c.ds_prefetch_bucket_size),
		DSMaxLiveParameters:         float64(c.ds_max_live_parameters),
		DSParamPersistenceThreshold: float64(c.ds_param_persistence_threshold),
		DDPGradientAsBucketView:     c.ddp_gradient_as_bucket_view != 0,
		EP:                          int64(c.ep), ETP: int64(c.etp), MoeCapacityFactor: float64(c.moe_capacity_factor),
		LastStageLayers: int64(c.last_stage_layers), FirstStageLayers: int64(c.first_stage_layers),
		CommOverlap:   int(c.comm_overlap),
		MoeDispatcher: int(c.moe_dispatcher), AttentionKernel: int(c.attention_kernel),
		ReduceBytes: float64(c.reduce_bytes), LossParallel: c.loss_parallel != 0, Autocast: int(c.autocast),
		FP8AllGather: c.fp8_all_gather != 0, NoSync: int(c.no_sync), LogitsHeld: c.logits_held != 0,
		DDP:        int(c.ddp),
		LossChunks: int(c.loss_chunks), FSDPUseOrigParams: c.fsdp_use_orig_params != 0, FP4: c.fp4 != 0,
		RecomputeModules: uint32(c.recompute_modules),
		UseLigerKernel:   c.use_liger_kernel != 0,
		MasterWeights:    int(c.master_weights), OptimizerStateBytes: float64(c.optimizer_state_bytes),
	}
}

// Stage is one pipeline stage (memest_stage).
type Stage struct {
	Index                                                                      int
	Layers                                                                     int64
	MicrobatchesInFlight, Parameters                                           float64
	WeightsBytes, GradientsBytes, OptimizerBytes, ActivationsBytes, TotalBytes float64
	// the training stack (1.2): torch.cuda's allocated and reserved peaks (reserved = the
	// stage's peak), host memory of what is offloaded, paged (managed) optimizer memory, and
	// the named parts inside the others
	PeakAllocatedBytes, PeakReservedBytes, HostBytes, PagedBytes        float64
	FrameworkBufferBytes, MasterWeightsBytes, LossBytes, RecomputeBytes float64
	OffloadStagingBytes                                                 float64
	// <= 0, in the stage's overheads: gradients allocated in backward as activations are freed
	// (fsdp, pytorch without gradient accumulation)
	PhaseOverlapBytes float64
	// The routed experts' share (mixture-of-experts models; included in the totals above).
	MoeLayers                                                      int64
	ExpertParameters, ExpertWeightsBytes, ExpertGradientsBytes     float64
	ExpertOptimizerBytes, ExpertActivationsBytes, MoeDispatchBytes float64
	MTPParameters                                                  float64
	// 1.6: what optimizer.step() allocates beyond what the activations freed (adamw_foreach's
	// temporaries; in the overheads), fsdp1's root unit kept unsharded from forward to backward
	// (in WeightsBytes), what torch.cuda.max_memory_allocated()/max_memory_reserved() report
	// (the CUDA context left out) and what nvidia-smi shows (reserved + context + paged)
	OptimizerStepBytes, UnshardedRootBytes                    float64
	TorchMaxMemoryAllocatedBytes, TorchMaxMemoryReservedBytes float64
	NvidiaSMIBytes                                            float64
}

// PretrainResult is memest_pretrain_result plus its stages.
type PretrainResult struct {
	NumParameters                float64
	DP, NumMicrobatches          int64
	EstimateBytes, PeakBytes     float64
	PeakStage                    int
	CapacityBytes, UsageFraction float64
	Verdict                      string // "fits", "tight", "oom", "unknown"
	Stages                       []Stage
	// the training stack (1.2), of the peak stage
	PeakAllocatedBytes, PeakReservedBytes, HostBytes float64
	Framework, Loss                                  string  // the names used (loss "auto" resolved)
	OptimizerBytesPerParameter                       float64 // K used (derived or given)
	EP, ETP, EDP                                     int64   // expert parallel, expert tensor parallel, expert data parallel
	// the throughput model (1.5; zeros when GlobalBatch is 0)
	Throughput Throughput
	// 1.6, of the peak stage: what torch.cuda and nvidia-smi would report; the peak's 90 % band
	// from memest's measured error (PeakErrorSigma); the probability that the real peak exceeds
	// CapacityBytes; CapacityBytes - PeakBytes (negative: over by that much)
	TorchMaxMemoryAllocatedBytes, TorchMaxMemoryReservedBytes, NvidiaSMIBytes float64
	PeakLowBytes, PeakHighBytes                                               float64
	OOMProbability, MarginBytes                                               float64
}

// Pretrain estimates per-GPU memory for 4D-parallel pretraining (memest_pretrain).
func Pretrain(r *PretrainRequest) (*PretrainResult, error) {
	c := r.toC()
	c.model, c.gpu = cModel(r.Model), cGPU(r.GPU)
	defer C.free(unsafe.Pointer(c.model))
	defer C.free(unsafe.Pointer(c.gpu))
	if r.PipelineLayout != "" { // a request passed to C may hold only C pointers
		c.pipeline_layout = C.CString(r.PipelineLayout)
		defer C.free(unsafe.Pointer(c.pipeline_layout))
	}
	n := r.PP
	if n < 1 || n > 1<<17 {
		n = 1
	}
	stages := make([]C.memest_stage, n)
	var res C.memest_pretrain_result
	res.struct_size = C.uint32_t(unsafe.Sizeof(res))
	if err := call(func() C.memest_status {
		return C.memest_pretrain(&c, &res, &stages[0], C.uint32_t(unsafe.Sizeof(stages[0])), C.uint32_t(len(stages)))
	}); err != nil {
		return nil, err
	}
	out := &PretrainResult{
		NumParameters: float64(res.num_parameters), DP: int64(res.dp),
		NumMicrobatches: int64(res.num_microbatches), EstimateBytes: float64(res.estimate_bytes),
		PeakBytes: float64(res.peak_bytes), PeakStage: int(res.peak_stage),
		CapacityBytes: float64(res.capacity_bytes), UsageFraction: float64(res.usage_fraction),
		Verdict:            verdictName(res.verdict),
		PeakAllocatedBytes: float64(res.peak_allocated_bytes), PeakReservedBytes: float64(res.peak_reserved_bytes),
		HostBytes:                  float64(res.host_bytes),
		Framework:                  C.GoString(C.memest_enum_name(C.MEMEST_ENUM_FRAMEWORK, res.framework)),
		Loss:                       C.GoString(C.memest_enum_name(C.MEMEST_ENUM_LOSS, res.loss)),
		OptimizerBytesPerParameter: float64(res.optimizer_bytes_per_parameter),
		EP:                         int64(res.ep), ETP: int64(res.etp), EDP: int64(res.edp),
		Throughput:                   pretrainThroughput(&res),
		TorchMaxMemoryAllocatedBytes: float64(res.torch_max_memory_allocated_bytes),
		TorchMaxMemoryReservedBytes:  float64(res.torch_max_memory_reserved_bytes),
		NvidiaSMIBytes:               float64(res.nvidia_smi_bytes),
		PeakLowBytes:                 float64(res.peak_low_bytes), PeakHighBytes: float64(res.peak_high_bytes),
		OOMProbability: float64(res.oom_probability), MarginBytes: float64(res.margin_bytes),
	}
	for i := 0; i < int(res.stage_count) && i < len(stages); i++ {
		s := stages[i]
		out.Stages = append(out.Stages, Stage{
			Index: int(s.index), Layers: int64(s.layers),
			MicrobatchesInFlight: float64(s.microbatches_in_flight), Parameters: float64(s.parameters),
			WeightsBytes: float64(s.weights_bytes), GradientsBytes: float64(s.gradients_bytes),
			OptimizerBytes: float64(s.optimizer_bytes), ActivationsBytes: float64(s.activations_bytes),
			TotalBytes:         float64(s.total_bytes),
			PeakAllocatedBytes: float64(s.peak_allocated_bytes), PeakReservedBytes: float64(s.peak_reserved_bytes),
			HostBytes: float64(s.host_bytes), PagedBytes: float64(s.paged_bytes),
			FrameworkBufferBytes: float64(s.framework_buffer_bytes), MasterWeightsBytes: float64(s.master_weights_bytes),
			LossBytes: float64(s.loss_bytes), RecomputeBytes: float64(s.recompute_bytes),
			OffloadStagingBytes: float64(s.offload_staging_bytes), PhaseOverlapBytes: float64(s.phase_overlap_bytes),
			MoeLayers: int64(s.moe_layers), ExpertParameters: float64(s.expert_parameters),
			ExpertWeightsBytes: float64(s.expert_weights_bytes), ExpertGradientsBytes: float64(s.expert_gradients_bytes),
			ExpertOptimizerBytes: float64(s.expert_optimizer_bytes), ExpertActivationsBytes: float64(s.expert_activations_bytes),
			MoeDispatchBytes: float64(s.moe_dispatch_bytes), MTPParameters: float64(s.mtp_parameters),
			OptimizerStepBytes: float64(s.optimizer_step_bytes), UnshardedRootBytes: float64(s.unsharded_root_bytes),
			TorchMaxMemoryAllocatedBytes: float64(s.torch_max_memory_allocated_bytes),
			TorchMaxMemoryReservedBytes:  float64(s.torch_max_memory_reserved_bytes),
			NvidiaSMIBytes:               float64(s.nvidia_smi_bytes),
		})
	}
	return out, nil
}

// ---- model states -------------------------------------------------------

// ModelStatesRequest is memest_model_states_request (GPU optional).
type ModelStatesRequest struct {
	Model                                 *Model
	GPU                                   *GPU
	GPUs                                  int64
	Zero                                  int
	ParamBytes, GradBytes, OptimizerBytes float64
}

// NewModelStatesRequest returns memest_model_states_request_init's defaults.
func NewModelStatesRequest(model *Model) *ModelStatesRequest {
	var c C.memest_model_states_request
	C.memest_model_states_request_init(&c, C.uint32_t(unsafe.Sizeof(c)))
	return &ModelStatesRequest{Model: model, GPUs: int64(c.gpus), Zero: int(c.zero),
		ParamBytes: float64(c.param_bytes), GradBytes: float64(c.grad_bytes),
		OptimizerBytes: float64(c.optimizer_bytes)}
}

// ModelStatesResult is memest_model_states_result.
type ModelStatesResult struct {
	NumParameters, WeightsBytes, GradientsBytes, OptimizerBytes, EstimateBytes, CapacityBytes float64
	Verdict                                                                                   string
}

// ModelStates computes weights, gradients and optimizer states per GPU (memest_model_states).
func ModelStates(r *ModelStatesRequest) (*ModelStatesResult, error) {
	var c C.memest_model_states_request
	C.memest_model_states_request_init(&c, C.uint32_t(unsafe.Sizeof(c)))
	c.model, c.gpu = cModel(r.Model), cGPU(r.GPU) // a nil GPU: verdict "unknown"
	defer C.free(unsafe.Pointer(c.model))
	defer C.free(unsafe.Pointer(c.gpu))
	c.gpus, c.zero = C.int64_t(r.GPUs), C.int32_t(r.Zero)
	c.param_bytes, c.grad_bytes, c.optimizer_bytes = C.double(r.ParamBytes), C.double(r.GradBytes), C.double(r.OptimizerBytes)
	var res C.memest_model_states_result
	res.struct_size = C.uint32_t(unsafe.Sizeof(res))
	if err := call(func() C.memest_status { return C.memest_model_states(&c, &res) }); err != nil {
		return nil, err
	}
	return &ModelStatesResult{float64(res.num_parameters), float64(res.weights_bytes),
		float64(res.gradients_bytes), float64(res.optimizer_bytes), float64(res.estimate_bytes),
		float64(res.capacity_bytes), verdictName(res.verdict)}, nil
}

// ---- fine-tuning (LLMem) ------------------------------------------------

// FinetuneRequest is memest_finetune_request.
type FinetuneRequest struct {
	Model                                        *Model
	GPU                                          *GPU
	GPUs                                         int64
	Method                                       int
	TP, Batch, SeqLen                            int64
	GradientCheckpointing, FlashAttention        bool
	ParamBytes, BaseBytes, PageBytes, ChunkBytes float64
}

// NewFinetuneRequest returns memest_finetune_request_init's defaults.
func NewFinetuneRequest(model *Model, gpu *GPU) *FinetuneRequest {
	var c C.memest_finetune_request
	C.memest_finetune_request_init(&c, C.uint32_t(unsafe.Sizeof(c)))
	return &FinetuneRequest{Model: model, GPU: gpu, GPUs: int64(c.gpus), Method: int(c.method),
		TP: int64(c.tp), Batch: int64(c.batch), SeqLen: int64(c.seq_len),
		GradientCheckpointing: c.gradient_checkpointing != 0, FlashAttention: c.flash_attention != 0,
		ParamBytes: float64(c.param_bytes), BaseBytes: float64(c.base_bytes),
		PageBytes: float64(c.page_bytes), ChunkBytes: float64(c.chunk_bytes)}
}

// toC is the C request, pointing at C copies of the model and GPU: call free when done.
func (r *FinetuneRequest) toC() C.memest_finetune_request {
	var c C.memest_finetune_request
	C.memest_finetune_request_init(&c, C.uint32_t(unsafe.Sizeof(c)))
	c.model, c.gpu = cModel(r.Model), cGPU(r.GPU)
	c.gpus, c.method, c.tp, c.batch, c.seq_len = C.int64_t(r.GPUs), C.int32_t(r.Method), C.int64_t(r.TP), C.int64_t(r.Batch), C.int64_t(r.SeqLen)
	c.gradient_checkpointing, c.flash_attention = boolInt(r.GradientCheckpointing), boolInt(r.FlashAttention)
	c.param_bytes, c.base_bytes, c.page_bytes, c.chunk_bytes = C.double(r.ParamBytes), C.double(r.BaseBytes), C.double(r.PageBytes), C.double(r.ChunkBytes)
	return c
}

func freeFinetune(c *C.memest_finetune_request) {
	C.free(unsafe.Pointer(c.model))
	C.free(unsafe.Pointer(c.gpu))
}

// FinetuneResult is the part of memest_finetune_result a scheduler needs.
type FinetuneResult struct {
	Method                                  string
	TP, DP, Batch                           int64
	PeakBytes, CapacityBytes, UsageFraction float64
	// Verdict is LLMem's own test ("fits" when the peak is within capacity); PeakVerdict (1.11)
	// the headline with every mode's margin: "fits" up to MEMEST_PEAK_FITS_FRACTION of
	// capacity, "tight" up to capacity, else "oom".
	Verdict     string
	PeakVerdict string
}

// Finetune is LLMem's peak for one method at the request's batch (memest_finetune).
func Finetune(r *FinetuneRequest) (*FinetuneResult, error) {
	c := r.toC()
	defer freeFinetune(&c)
	var res C.memest_finetune_result
	res.struct_size = C.uint32_t(unsafe.Sizeof(res))
	if err := call(func() C.memest_status { return C.memest_finetune(&c, &res) }); err != nil {
		return nil, err
	}
	return &FinetuneResult{MethodName(int(res.method)), int64(res.tp), int64(res.dp), int64(res.batch),
		float64(res.peak_bytes), float64(res.capacity_bytes), float64(res.usage_fraction),
		verdictName(res.verdict), verdictName(res.peak_verdict)}, nil
}

// FinetuneOption is one method's row of Algorithm 1.
type FinetuneOption struct {
	Method           string
	Applicable       bool
	TP, DP, MaxBatch int64
	Score, PeakBytes float64
}

// FinetuneChoice is LLMem Algorithm 1's answer.
type FinetuneChoice struct {
	Selected string // "cdp", "zero3", "tp", "dp+tp" or "cpu_offload"
	Batch    int64
	Options  []FinetuneOption
}

// FinetuneSelect runs LLMem's Algorithm 1 (memest_finetune_select).
func FinetuneSelect(r *FinetuneRequest) (*FinetuneChoice, error) {
	c := r.toC()
	defer freeFinetune(&c)
	var ch C.memest_finetune_choice
	ch.struct_size = C.uint32_t(unsafe.Sizeof(ch))
	options := make([]C.memest_finetune_option, 8)
	if err := call(func() C.memest_status {
		return C.memest_finetune_select(&c, &ch, &options[0], C.uint32_t(unsafe.Sizeof(options[0])), C.uint32_t(len(options)))
	}); err != nil {
		return nil, err
	}
	out := &FinetuneChoice{Selected: MethodName(int(ch.selected)), Batch: int64(ch.batch)}
	if n := int(ch.option_count); n < len(options) {
		options = options[:n]
	}
	for _, o := range options {
		out.Options = append(out.Options, FinetuneOption{MethodName(int(o.method)), o.applicable != 0,
			int64(o.tp), int64(o.dp), int64(o.max_batch), float64(o.score), float64(o.peak_bytes)})
	}
	return out, nil
}

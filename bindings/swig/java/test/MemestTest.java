import java.util.List;
import org.memest.Memest;
import org.memest.MemestException;
import org.memest.swig.*;

/** A scheduler written in Java: builds requests, reads the peak per GPU and the verdict, and
 *  handles bad input as a MemestException naming the field. Run with java -ea. */
public class MemestTest {
  static int checks = 0;

  static void checkLayers(Memest.Pretrain p, long[] want, String what) {
    check(p.stages().size() == want.length, what + ": stage count");
    for (int i = 0; i < want.length; i++) {
      check(p.stages().get(i).getLayers() == want[i],
          what + ": stage " + i + " holds " + p.stages().get(i).getLayers() + ", want " + want[i]);
    }
  }

  static void check(boolean ok, String what) {
    checks++;
    if (!ok) throw new AssertionError(what);
  }

  interface Call { void run() throws MemestException; }

  static MemestException expectError(Call call, String code, String field) {
    try {
      call.run();
    } catch (MemestException e) {
      check(e.code().equals(code), "code " + e.code() + " != " + code);
      check(e.field().equals(field), "field " + e.field() + " != " + field);
      check(!e.getMessage().isEmpty(), "message");
      return e;
    }
    throw new AssertionError("no MemestException for " + code + " " + field);
  }

  static double jsonNumber(String json, String key) {
    String p = "\"" + key + "\": ";
    int i = json.indexOf(p) + p.length();
    int j = i;
    while (j < json.length() && "0123456789.eE+-".indexOf(json.charAt(j)) >= 0) j++;
    return Double.parseDouble(json.substring(i, j));
  }

  public static void main(String[] args) throws Exception {
    check(Memest.version().matches("\\d+\\.\\d+\\.\\d+"), "version");

    // Which of these layouts fit on 8 x A100 40GB for Llama-3.1-8B at 8k tokens?
    int fits = 0;
    for (int[] layout : new int[][] {{1, 1}, {2, 1}, {4, 2}, {8, 1}}) {
      PretrainRequest r = Memest.pretrainRequest("llama-3.1-8b", "a100-40gb");
      r.setGpus(8); r.setTp(layout[0]); r.setPp(layout[1]); r.setSeq_len(8192);
      Memest.Pretrain p = Memest.pretrain(r);
      check(p.stages().size() == layout[1], "stage count");
      check(p.result().getPeak_bytes() >= p.result().getEstimate_bytes(), "peak >= estimate");
      if (p.verdict().equals("fits")) fits++;
    }
    check(fits >= 1, "some layout fits");

    PretrainRequest r = Memest.pretrainRequest("llama-3.1-8b", "a100-40gb");
    r.setGpus(8); r.setTp(4); r.setPp(2); r.setSeq_len(8192); r.setGlobal_batch(1024);
    Memest.Pretrain p = Memest.pretrain(r);
    check(p.verdict().equals("fits"), "README example fits");
    check(Math.abs(p.result().getEstimate_bytes() / (1L << 30) - 27.20) < 0.005, "27.20 GiB");
    check(p.stages().get(0).getLayers() == 16, "16 layers on stage 0");
    check(r.getModel().getName().equals("Llama-3.1-8B"), "model name via SWIG char[64]");
    String json = Memest.request("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-40gb\","
        + " \"parallel\": {\"gpus\": 8, \"tp\": 4, \"pp\": 2}, \"training\": {\"seq_len\": 8192, \"global_batch\": 1024}}");
    check(jsonNumber(json, "estimate_bytes") == p.result().getEstimate_bytes(), "typed == JSON estimate");
    check(jsonNumber(json, "peak_bytes") == p.result().getPeak_bytes(), "typed == JSON peak");

    // Mixtral 8x7B as Megatron-LM's example runs it: TP1, PP4, EP8 on 32 GPUs (edp 1); 8 MoE
    // layers per stage, 8 experts of 3*4096*14336 each over ep*etp = 8 GPUs.
    PretrainRequest moe = Memest.pretrainRequest("mixtral-8x7b", "h100-80gb");
    moe.setGpus(32); moe.setTp(1); moe.setPp(4); moe.setEp(8); moe.setSeq_len(4096);
    Memest.Pretrain mp = Memest.pretrain(moe);
    check(mp.result().getEp() == 8 && mp.result().getEtp() == 1 && mp.result().getEdp() == 1, "ep/etp/edp");
    check(mp.stages().get(0).getMoe_layers() == 8, "8 MoE layers on stage 0");
    check(mp.stages().get(0).getExpert_parameters() == 8.0 * 3 * 4096 * 14336, "expert parameters");
    check(!mp.verdict().equals("oom"), "the published Mixtral layout fits");
    moe.setEp(3);
    expectError(() -> Memest.pretrain(moe), "invalid_argument", "parallel.ep");

    // 1.7: first/last stage layers and Megatron's layout string through the typed struct.
    // Llama-3.1-8B's 32 layers over pp 4: first 6 and last 6 leave 10 + 10 between.
    PretrainRequest ends = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    ends.setGpus(4); ends.setTp(1); ends.setPp(4);
    check(ends.getFirst_stage_layers() == 0 && ends.getPipeline_layout() == null, "1.7 defaults");
    ends.setFirst_stage_layers(6); ends.setLast_stage_layers(6);
    checkLayers(Memest.pretrain(ends), new long[] {6, 10, 10, 6}, "first/last 6");
    ends.setFirst_stage_layers(0); ends.setLast_stage_layers(0); ends.setVpp(2);
    // set twice: the wrapper frees its first copy (ASan/valgrind would see a leak otherwise)
    ends.setPipeline_layout("Et*3|t*5|t*5|t*3L");
    expectError(() -> Memest.pretrain(ends), "invalid_argument", "parallel.pipeline_layout");
    ends.setPipeline_layout("Et*3|t*5|t*5|t*3|t*3|t*5|t*5|t*3L");
    check(ends.getPipeline_layout().equals("Et*3|t*5|t*5|t*3|t*3|t*5|t*5|t*3L"), "layout read back");
    checkLayers(Memest.pretrain(ends), new long[] {6, 10, 10, 6}, "pipeline_layout");
    ends.setPipeline_layout(null);
    ends.setVpp(1);
    checkLayers(Memest.pretrain(ends), new long[] {8, 8, 8, 8}, "layout cleared");
    check(Memest.enumNames(memest_enum.MEMEST_ENUM_LORA_TARGET).get(memest_lora_target.MEMEST_LORA_ROUTER)
        .equals("router"), "router target");
    // LoRA through the typed struct: Llama-3.1-8B, q_proj + v_proj at r 8 (the defaults):
    // (8*(4096+4096) + 8*(4096+1024)) * 32 = 3407872 trainable, fp32 adapters 4 bytes each
    PretrainRequest lora = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    lora.setGpus(1); lora.setSeq_len(2048);
    lora.setFramework(memest_framework.MEMEST_FRAMEWORK_PYTORCH);
    lora.setAdapter(memest_adapter.MEMEST_ADAPTER_LORA);
    check(lora.getLora_rank() == 8, "peft's default rank");
    Memest.Pretrain lp = Memest.pretrain(lora);
    check(lp.result().getTrainable_parameters() == 3407872.0, "trainable adapter parameters");
    check(lp.stages().get(0).getAdapter_weights_bytes() == 3407872.0 * 4, "fp32 adapter weights");
    lora.setAdapter(memest_adapter.MEMEST_ADAPTER_QLORA);
    lora.setParam_bytes(4);
    expectError(() -> Memest.pretrain(lora), "invalid_argument", "training.param_dtype");

    // 1.7: DDP on one process (memest_pretrain_request.ddp). Llama-3.1-8B under plain PyTorch,
    // fp32 gradients, one GPU: a bucket size alone (25 MB) wraps nothing; ddp 1 (torchrun with
    // DDP around one GPU) buckets every gradient, 4 bytes x num_parameters; ddp 0 on 2 GPUs refused.
    PretrainRequest ddp = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    check(ddp.getDdp() == -1, "1.7 ddp default");
    ddp.setGpus(1); ddp.setTp(1); ddp.setPp(1);
    ddp.setFramework(memest_framework.MEMEST_FRAMEWORK_PYTORCH);
    ddp.setParam_bytes(4); ddp.setGrad_bytes(4); ddp.setDdp_bucket_mib(25);
    ddp.setOptimizer_bytes(MemestNativeConstants.MEMEST_OPTIMIZER_BYTES_DERIVE);
    ddp.setGrad_bytes(MemestNativeConstants.MEMEST_GRAD_BYTES_DERIVE);  // 1.11: as JSON without grad_dtype
    Memest.Pretrain alone = Memest.pretrain(ddp);
    check(alone.stages().get(0).getFramework_buffer_bytes() == 0, "a bucket size alone wraps no process");
    ddp.setDdp(1);
    Memest.Pretrain wrapped = Memest.pretrain(ddp);
    double params = wrapped.result().getNum_parameters();
    check(params > 8e9 && wrapped.stages().get(0).getFramework_buffer_bytes() == 4 * params,
        "ddp 1: DDP buckets of " + params + " fp32 gradients, got " + wrapped.stages().get(0).getFramework_buffer_bytes());
    check(wrapped.result().getPeak_bytes() > alone.result().getPeak_bytes(), "ddp 1 raises the peak");
    ddp.setDdp(0); ddp.setGpus(2);
    expectError(() -> Memest.pretrain(ddp), "invalid_argument", "training.ddp");
    ddp.setGpus(1); ddp.setDdp(1); ddp.setFramework(memest_framework.MEMEST_FRAMEWORK_MEGATRON);
    expectError(() -> Memest.pretrain(ddp), "invalid_argument", "training.ddp");

    // 1.9 (the hand-derived values of tests/unit/test_memory_mechanisms_1_9.cpp). The new names
    // come from the library's tables.
    check(Memest.enumNames(memest_enum.MEMEST_ENUM_LOSS).get(memest_loss.MEMEST_LOSS_CHUNKED_LM_HEAD).equals("chunked_lm_head")
        && Memest.enumNames(memest_enum.MEMEST_ENUM_LOSS).get(memest_loss.MEMEST_LOSS_CHUNKED_LINEAR).equals("chunked_linear"),
        "1.9 loss names");
    check(Memest.gpuPresets().contains("h100-pcie-80gb") && Memest.gpu("h100-pcie-80gb").getFp4() == 0, "h100-pcie-80gb preset");
    Gpu b200 = Memest.gpu("b200-180gb");
    check(b200.getFp4() == 1 && b200.getPeak_fp4_tflops() == 2 * b200.getPeak_fp8_tflops(), "b200 fp4 " + b200.getFp4());
    // loss_chunks: torchtitan's ChunkedLossWrapper, Llama-3.1-8B on one GPU under plain PyTorch,
    // 4096 tokens, full recompute: 525336576 logits x 14 / 8 + the fp32 accumulator 4 x 4096 x
    // 4096 = 986447872 bytes at the default 8 chunks, 459669504 + 67108864 = 526778368 at 16
    PretrainRequest chunks = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    check(chunks.getLoss_chunks() == 0 && chunks.getFsdp_use_orig_params() == 0 && chunks.getFp4() == 0, "1.9 defaults");
    chunks.setGpus(1); chunks.setTp(1); chunks.setPp(1); chunks.setSeq_len(4096); chunks.setMicro_batch(1);
    chunks.setRecompute(memest_recompute.MEMEST_RECOMPUTE_FULL);
    chunks.setFramework(memest_framework.MEMEST_FRAMEWORK_PYTORCH);
    chunks.setOptimizer_bytes(MemestNativeConstants.MEMEST_OPTIMIZER_BYTES_DERIVE);
    chunks.setGrad_bytes(MemestNativeConstants.MEMEST_GRAD_BYTES_DERIVE);  // 1.11: as JSON without grad_dtype
    chunks.setLoss(memest_loss.MEMEST_LOSS_CHUNKED_LINEAR);
    Memest.Pretrain eight = Memest.pretrain(chunks);
    check(eight.loss().equals("chunked_linear") && eight.stages().get(0).getLoss_bytes() == 986447872.0,
        "chunked_linear, 8 chunks: " + eight.stages().get(0).getLoss_bytes());
    chunks.setLoss_chunks(16);
    Memest.Pretrain sixteen = Memest.pretrain(chunks);
    check(sixteen.stages().get(0).getLoss_bytes() == 526778368.0,
        "chunked_linear, 16 chunks: " + sixteen.stages().get(0).getLoss_bytes());
    String chunked = Memest.request("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
        + " \"parallel\": {\"gpus\": 1}, \"training\": {\"seq_len\": 4096, \"micro_batch\": 1,"
        + " \"framework\": \"pytorch\", \"recompute\": \"full\", \"loss\": \"chunked_linear\", \"loss_chunks\": 16}}");
    check(jsonNumber(chunked, "loss_bytes") == sixteen.stages().get(0).getLoss_bytes()
        && jsonNumber(chunked, "loss_chunks") == 16, "typed == JSON loss_chunks");
    chunks.setLoss(memest_loss.MEMEST_LOSS_UNFUSED);
    expectError(() -> Memest.pretrain(chunks), "invalid_argument", "training.loss_chunks");
    // fsdp_use_orig_params: fsdp1 + LoRA (q_proj, v_proj, r 8, bf16) on 8 GPUs at zero 3: the
    // adapters' gradient 3407872 x 2 / 8 = 851968 bytes wrapped apart, (6979584000 + 3407872) x
    // 2 / 8 = 1745747968 with the blocks' frozen weights in each flat parameter
    PretrainRequest origParams = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    origParams.setGpus(8); origParams.setZero(3); origParams.setSeq_len(2048); origParams.setMicro_batch(1); origParams.setGlobal_batch(8);
    origParams.setFramework(memest_framework.MEMEST_FRAMEWORK_FSDP1);
    origParams.setOptimizer_bytes(MemestNativeConstants.MEMEST_OPTIMIZER_BYTES_DERIVE);
    origParams.setGrad_bytes(MemestNativeConstants.MEMEST_GRAD_BYTES_DERIVE);  // 1.11: as JSON without grad_dtype
    origParams.setAdapter(memest_adapter.MEMEST_ADAPTER_LORA); origParams.setAdapter_bytes(2);
    check(Memest.pretrain(origParams).stages().get(0).getAdapter_gradients_bytes() == 851968.0, "adapters wrapped apart");
    origParams.setFsdp_use_orig_params(1);
    Memest.Pretrain mixed = Memest.pretrain(origParams);
    check(mixed.stages().get(0).getAdapter_gradients_bytes() == 1745747968.0
        && mixed.stages().get(0).getGradients_bytes() == 1745747968.0,
        "use_orig_params: " + mixed.stages().get(0).getAdapter_gradients_bytes());
    origParams.setFramework(memest_framework.MEMEST_FRAMEWORK_FSDP);
    expectError(() -> Memest.pretrain(origParams), "invalid_argument", "training.fsdp_use_orig_params");
    // fp4: NVFP4 on 8 x B200 under Megatron, 8192 tokens, full recompute: the linears' 7504658432
    // parameters in two 0.5625-byte copies instead of fp8's two 1-byte copies, 6566576128 bytes
    // less; refused on an H100 and with fp8, naming training.fp4
    PretrainRequest nv = Memest.pretrainRequest("llama-3.1-8b", "b200-180gb");
    nv.setGpus(8); nv.setTp(1); nv.setPp(1); nv.setSeq_len(8192); nv.setMicro_batch(1); nv.setGlobal_batch(8);
    nv.setRecompute(memest_recompute.MEMEST_RECOMPUTE_FULL);
    nv.setFp8(1);
    Memest.Pretrain nvFp8 = Memest.pretrain(nv);
    nv.setFp8(0); nv.setFp4(1);
    Memest.Pretrain nvFp4 = Memest.pretrain(nv);
    check(nvFp8.stages().get(0).getWeights_bytes() - nvFp4.stages().get(0).getWeights_bytes() == 6566576128.0,
        "fp4 weights: " + (nvFp8.stages().get(0).getWeights_bytes() - nvFp4.stages().get(0).getWeights_bytes()));
    check(nvFp4.result().getTokens_per_s() > nvFp8.result().getTokens_per_s(), "NVFP4 runs faster than fp8");
    nv.setFp8(1);
    expectError(() -> Memest.pretrain(nv), "invalid_argument", "training.fp4");
    PretrainRequest hopper = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    hopper.setGpus(8); hopper.setTp(1); hopper.setPp(1); hopper.setSeq_len(8192); hopper.setGlobal_batch(8);
    hopper.setFp4(1);
    expectError(() -> Memest.pretrain(hopper), "invalid_argument", "training.fp4");

    // 1.10 (the hand-derived values of tests/unit/test_memory_mechanisms_1_10.cpp and
    // tests/unit/test_megatron_lora.cpp). flash-attn's CrossEntropyLoss is named by the
    // library's table and refused under Megatron, which has its own vocab-parallel loss.
    check(Memest.enumNames(memest_enum.MEMEST_ENUM_LOSS).get(memest_loss.MEMEST_LOSS_FLASH_ATTN).equals("flash_attn")
        && Memest.enumValue(memest_enum.MEMEST_ENUM_LOSS, "flash_attn") == memest_loss.MEMEST_LOSS_FLASH_ATTN,
        "1.10 loss name");
    PretrainRequest flash = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    flash.setGpus(8); flash.setSeq_len(4096); flash.setMicro_batch(1);
    flash.setFramework(memest_framework.MEMEST_FRAMEWORK_MEGATRON);
    flash.setLoss(memest_loss.MEMEST_LOSS_FLASH_ATTN);
    expectError(() -> Memest.pretrain(flash), "invalid_argument", "training.loss");
    // fp8 parameters (--fp8-param-gather): Llama-3.1-8B under Megatron, tp = pp = 1 on 8 GPUs,
    // fp8: 2 x 8030261248 + two fp8 copies 2 x 7504658432 = 31069839360 bytes with bf16
    // parameters; 8030261248 + one transposed copy 7504658432 + 1050939392 more for what stays
    // bf16 (norms, embedding, output layer) = 16585859072 with fp8 parameters (param_bytes 1)
    PretrainRequest f8 = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    f8.setGpus(8); f8.setTp(1); f8.setPp(1); f8.setZero(1); f8.setSeq_len(4096); f8.setMicro_batch(1); f8.setGlobal_batch(64);
    f8.setFramework(memest_framework.MEMEST_FRAMEWORK_MEGATRON);
    f8.setFp8(1);
    check(Memest.pretrain(f8).stages().get(0).getWeights_bytes() == 31069839360.0, "fp8 with bf16 parameters");
    f8.setParam_bytes(1);
    double f8Weights = Memest.pretrain(f8).stages().get(0).getWeights_bytes();
    check(f8Weights == 16585859072.0, "fp8 parameters: " + f8Weights);
    // LoRA under Megatron, through the JSON entry point: Llama-3.1-8B, tp 2 (dp 4), rank 16 on
    // the seven block linears, bf16 adapters. One rank holds 32 x 688128 = 22020096 adapter
    // parameters: bf16 weights 44040192, fp32 main gradients 88080384, the main copy and two
    // moments over dp 4, 12 x 22020096 / 4 = 66060288; the whole model 32 x 1114112 = 35651584.
    String megatronLora = "{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
        + " \"parallel\": {\"gpus\": 8, \"tp\": 2, \"pp\": 1, \"zero\": 1}, \"training\": {\"seq_len\": 4096,"
        + " \"micro_batch\": 1, \"global_batch\": 64, \"framework\": \"megatron\", \"adapter\": {\"type\": \"lora\","
        + " \"rank\": 16, \"dtype\": \"bf16\", \"targets\": [\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\","
        + " \"gate_proj\", \"up_proj\", \"down_proj\"]}}}";
    String ml = Memest.request(megatronLora);
    check(ml.contains("\"ok\": true"), "megatron lora answered");
    String stage0 = ml.substring(ml.indexOf("\"stages\": ["));
    check(jsonNumber(stage0, "trainable_parameters") == 22020096.0, "megatron lora: stage 0 adapter parameters");
    check(jsonNumber(stage0, "adapter_weights_bytes") == 44040192.0, "megatron lora: adapter weights");
    check(jsonNumber(stage0, "adapter_gradients_bytes") == 88080384.0, "megatron lora: adapter gradients");
    check(jsonNumber(stage0, "adapter_optimizer_bytes") == 66060288.0, "megatron lora: adapter optimizer states");
    check(jsonNumber(ml.substring(ml.indexOf("\"throughput\": {")), "trainable_parameters") == 35651584.0,
        "megatron lora: trainable parameters of the model");
    // the same run typed: the same numbers through memest_pretrain
    PretrainRequest tl = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    tl.setGpus(8); tl.setTp(2); tl.setPp(1); tl.setZero(1); tl.setSeq_len(4096); tl.setMicro_batch(1); tl.setGlobal_batch(64);
    tl.setFramework(memest_framework.MEMEST_FRAMEWORK_MEGATRON);
    tl.setAdapter(memest_adapter.MEMEST_ADAPTER_LORA); tl.setLora_rank(16); tl.setAdapter_bytes(2);
    long seven = 0;
    for (int t : new int[] {memest_lora_target.MEMEST_LORA_Q_PROJ, memest_lora_target.MEMEST_LORA_K_PROJ,
        memest_lora_target.MEMEST_LORA_V_PROJ, memest_lora_target.MEMEST_LORA_O_PROJ, memest_lora_target.MEMEST_LORA_GATE_PROJ,
        memest_lora_target.MEMEST_LORA_UP_PROJ, memest_lora_target.MEMEST_LORA_DOWN_PROJ}) seven |= 1L << t;
    tl.setLora_targets(seven);
    Memest.Pretrain tlp = Memest.pretrain(tl);
    check(tlp.result().getTrainable_parameters() == 35651584.0
        && tlp.stages().get(0).getAdapter_gradients_bytes() == 88080384.0
        && tlp.result().getPeak_bytes() == jsonNumber(ml, "peak_bytes"), "typed == JSON megatron lora");
    // peft's fp32 adapters are refused under Megatron, which builds them in params_dtype
    tl.setAdapter_bytes(4);
    expectError(() -> Memest.pretrain(tl), "invalid_argument", "training.adapter.dtype");
    // 1.16: MEMEST_ADAPTER_BYTES_DERIVE asks for the stack's adapter dtype, the model's bf16 under
    // Megatron (the init keeps fp32's 4): the same 44040192 bytes of adapters a rank, the same peak
    check(new PretrainRequest().getAdapter_bytes() == 4.0, "pretrain_request_init keeps adapter_bytes 4");
    tl.setAdapter_bytes(MemestNativeConstants.MEMEST_ADAPTER_BYTES_DERIVE);
    Memest.Pretrain derived = Memest.pretrain(tl);
    check(derived.stages().get(0).getAdapter_weights_bytes() == 44040192.0,
        "derived adapter dtype under megatron: " + derived.stages().get(0).getAdapter_weights_bytes());
    check(derived.result().getPeak_bytes() == jsonNumber(ml, "peak_bytes"), "derived adapter dtype: typed == JSON");
    // and JSON without "dtype" derives it, echoing bf16; "fp32" spelled out is refused by field
    String noDtype = megatronLora.replace(" \"dtype\": \"bf16\",", "");
    check(!noDtype.contains("\"dtype\""), "the adapter without a dtype");
    String nd = Memest.request(noDtype);
    check(jsonSection(jsonSection(nd, "training"), "adapter").contains("\"dtype\": \"bf16\""),
        "derived adapter dtype echoed: " + jsonSection(jsonSection(nd, "training"), "adapter"));
    check(jsonNumber(nd.substring(nd.indexOf("\"stages\": [")), "adapter_weights_bytes") == 44040192.0,
        "derived adapter dtype: adapter weights through JSON");
    expectError(() -> Memest.request(megatronLora.replace("\"bf16\"", "\"fp32\"")), "invalid_argument",
        "training.adapter.dtype");

    // bad input: the exception names the field
    r.setTp(3);
    expectError(() -> Memest.pretrain(r), "invalid_argument", "parallel.tp");
    expectError(() -> Memest.model("no-such-model"), "unknown_preset", "model");
    expectError(() -> Memest.gpu("z100"), "unknown_preset", "gpu");
    expectError(() -> Memest.request("{not json"), "parse_error", "");
    expectError(() -> Memest.request("{\"mode\": \"pretrain\", \"model\": \"gpt2\", \"gpu\": \"a100-40gb\","
        + " \"training\": {\"seq_length\": 1}}"), "unknown_field", "training.seq_length");
    expectError(() -> Memest.modelFromConfig("{\"model_type\": \"llama\", \"hidden_size\": 4096}"),
        "missing_field", "model.num_hidden_layers");

    // text the C library cannot be handed: refused as a parse error, not cut short
    String good = "{\"mode\": \"model_states\", \"model\": \"llama-2-7b\"}";
    check(Memest.request(good).contains("\"ok\": true"), "good request");
    MemestException nul = expectError(() -> Memest.request(good + "\0 lost"), "parse_error", "");
    check(nul.status() == memest_status.MEMEST_ERR_PARSE && nul.getMessage().contains("NUL"), "NUL byte");
    expectError(() -> Memest.model("gpt2\0x"), "unknown_preset", "model");
    // strict JSON: null refused with the field named; duplicate keys and 1e999 are parse errors
    expectError(() -> Memest.request("{\"mode\": \"pretrain\", \"model\": \"gpt2\", \"gpu\": \"a100-40gb\","
        + " \"training\": {\"recompute\": null}}"), "wrong_type", "training.recompute");
    expectError(() -> Memest.request("{\"mode\": \"model_states\", \"model\": \"gpt2\", \"model\": \"gpt2\"}"),
        "parse_error", "");
    expectError(() -> Memest.request("{\"mode\": \"model_states\", \"model\": {\"num_parameters\": 1e999}}"),
        "parse_error", "");

    // struct sizes: proxies are sized by their constructors; a size the library does not know
    // is refused with the field named
    check(new Model().getStruct_size() > 0 && new PretrainResult().getStruct_size() > 0, "sized");
    PretrainResult unsized = new PretrainResult();
    unsized.setStruct_size(0);
    r.setTp(4);
    int status = MemestNative.pretrain(r, unsized, null, MemestNative.swig_stage_size(), 0);
    check(status == memest_status.MEMEST_ERR_STRUCT_SIZE, "struct_size 0 refused");
    check(MemestNative.last_error_field().equals("result.struct_size"), "result.struct_size named");
    PretrainRequest noGpu = new PretrainRequest();
    noGpu.setModel(Memest.model("gpt2"));
    expectError(() -> Memest.pretrain(noGpu), "missing_field", "gpu");
    check(noGpu.getGpu() == null && noGpu.getModel() != null, "kept model");

    // the request keeps its model and GPU alive: collect garbage, then compute again
    PretrainRequest kept = Memest.pretrainRequest("llama-3.1-8b", "a100-40gb");
    kept.setGpus(8); kept.setTp(4); kept.setPp(2); kept.setSeq_len(8192); kept.setGlobal_batch(1024);
    for (int i = 0; i < 5; i++) { System.gc(); System.runFinalization(); }
    check(Memest.pretrain(kept).result().getEstimate_bytes() == p.result().getEstimate_bytes(), "kept alive");

    // names and bands come from the library's tables (the JSON "enums" mode lists the same)
    String enums = Memest.request("{\"mode\": \"enums\"}");
    int[] kinds = {memest_enum.MEMEST_ENUM_STATUS, memest_enum.MEMEST_ENUM_FAMILY, memest_enum.MEMEST_ENUM_VERDICT,
        memest_enum.MEMEST_ENUM_RECOMPUTE, memest_enum.MEMEST_ENUM_ACTIVATION_MODEL,
        memest_enum.MEMEST_ENUM_PRUNE_REASON, memest_enum.MEMEST_ENUM_FINETUNE_METHOD,
        memest_enum.MEMEST_ENUM_ADAPTER, memest_enum.MEMEST_ENUM_LORA_TARGET, memest_enum.MEMEST_ENUM_COMPILE,
        memest_enum.MEMEST_ENUM_RECOMPUTE_MODULE, memest_enum.MEMEST_ENUM_MASTER_WEIGHTS};
    String[] keys = {"status", "family", "verdict", "recompute", "activation_model", "prune_reason", "finetune_method",
        "adapter", "lora_target", "compile", "recompute_module", "master_weights"};
    for (int k = 0; k < kinds.length; k++) {
      List<String> names = Memest.enumNames(kinds[k]);
      check(!names.isEmpty(), keys[k]);
      StringBuilder list = new StringBuilder("\"" + keys[k] + "\": [");
      for (int v = 0; v < names.size(); v++) {
        list.append(v == 0 ? "" : ", ").append('"').append(names.get(v)).append('"');
        check(Memest.enumValue(kinds[k], names.get(v)) == v, keys[k] + " value");
      }
      String flat = enums.replaceAll("\\s+", " ").replace("[ ", "[").replace(" ]", "]");
      check(flat.contains(list.append("]").toString()), keys[k] + " as in the enums mode: " + list);
    }
    check(Memest.enumNames(memest_enum.MEMEST_ENUM_STATUS).size() == memest_status.MEMEST_STATUS_COUNT, "status count");
    check(Memest.enumNames(memest_enum.MEMEST_ENUM_PRUNE_REASON).size() == memest_prune_reason.MEMEST_PRUNE_REASON_COUNT,
        "prune reason count");
    check(Memest.enumValue(memest_enum.MEMEST_ENUM_RECOMPUTE, "selective") == memest_recompute.MEMEST_RECOMPUTE_SELECTIVE,
        "recompute constant");
    check(Memest.verdictBands().get("fits") == jsonNumber(enums, "fits"), "fits band");
    check(Memest.verdictBands().get("tight") == jsonNumber(enums, "tight"), "tight band");
    check(p.result().getUsage_fraction() <= Memest.verdictBands().get("fits"), "README example in the fits band");

    // model states: the ZeRO table's 7.5B on 64 GPUs with P_os = 31.4 GB
    Model bare = Memest.bareModel(7.5e9);
    ModelStatesRequest ms = Memest.modelStatesRequest(bare);
    ms.setGpus(64); ms.setZero(1); ms.setParam_bytes(2); ms.setGrad_bytes(2);
    ModelStatesResult msr = Memest.modelStates(ms);
    check(Math.abs(msr.getEstimate_bytes() / 1e9 - 31.4) < 0.05, "ZeRO table 31.4 GB");
    check(Memest.verdictName(msr.getVerdict()).equals("unknown"), "no GPU: unknown");

    // fine-tuning: LLMem Algorithm 1 picks a method, agreeing with the JSON entry point
    FinetuneRequest ft = Memest.finetuneRequest("opt-1.3b", "v100-16gb");
    ft.setGpus(4);
    Memest.FinetuneSelection selection = Memest.finetuneSelect(ft);
    FinetuneChoice choice = selection.choice();
    String selected = selection.selected();
    String auto = Memest.request("{\"mode\": \"finetune\", \"model\": \"opt-1.3b\", \"gpu\": \"v100-16gb\","
        + " \"parallel\": {\"gpus\": 4}, \"finetune\": {\"method\": \"auto\"}}");
    check(auto.contains("\"selected\": \"" + selected + "\""), "selected " + selected);
    check(jsonNumber(auto, "max_batch") == choice.getBatch(), "max batch");
    check(selection.options().size() == 4 && choice.getOption_count() == 4, "four options");
    for (int i = 0; i < 4; i++) {
      check(Memest.methodName(selection.options().get(i).getMethod())
          .equals(Memest.enumNames(memest_enum.MEMEST_ENUM_FINETUNE_METHOD).get(i)), "option order");
    }
    ft.setMethod(memest_finetune_method.MEMEST_FINETUNE_ZERO3);
    ft.setBatch(8);
    FinetuneResult one = Memest.finetune(ft);
    check(one.getPeak_bytes() > 0 && one.getPer_gpu().getBase() > 0, "zero3 peak");
    ft.setMethod(memest_finetune_method.MEMEST_FINETUNE_AUTO);
    try { Memest.finetune(ft); check(false, "AUTO refused by finetune"); } catch (MemestException e) { checks++; }

    // 1.11: fine-tuning's peak_verdict, the headline with every mode's margin, beside LLMem's own
    // verdict. Algorithm 1 on Llama-3.1-8B, 8 x A100 80GB, 2048 tokens: the selected method's
    // peak is 98.8 % of capacity, within it (verdict fits) but past the fits band (tight).
    String tightJson = Memest.request("{\"mode\": \"finetune\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-80gb\","
        + " \"parallel\": {\"gpus\": 8}, \"training\": {\"seq_len\": 2048}, \"finetune\": {\"method\": \"auto\"}}");
    check(tightJson.contains("\"verdict\": \"fits\"") && tightJson.contains("\"peak_verdict\": \"tight\""),
        "JSON finetune verdict fits, peak_verdict tight");
    FinetuneRequest tightFt = Memest.finetuneRequest("llama-3.1-8b", "a100-80gb");
    tightFt.setGpus(8); tightFt.setSeq_len(2048);
    Memest.FinetuneSelection tightSel = Memest.finetuneSelect(tightFt);
    check(tightJson.contains("\"selected\": \"" + tightSel.selected() + "\""), "typed selection " + tightSel.selected());
    tightFt.setMethod(tightSel.choice().getSelected());
    tightFt.setBatch(tightSel.choice().getBatch());
    FinetuneResult tight = Memest.finetune(tightFt);
    check(Memest.verdictName(tight.getVerdict()).equals("fits")
        && Memest.verdictName(tight.getPeak_verdict()).equals("tight"),
        "typed verdict " + Memest.verdictName(tight.getVerdict()) + ", peak_verdict " + Memest.verdictName(tight.getPeak_verdict()));
    // (the JSON's first "peak_bytes" is a method's: compare the top level's usage and estimate)
    check(tight.getUsage_fraction() == jsonNumber(tightJson, "usage_fraction")
        && tight.getPeak_bytes() == jsonNumber(tightJson, "estimate_bytes"), "typed finetune peak == JSON");

    // 1.11: Megatron-Core's recompute modules through the typed struct (the hand-derived values
    // of tests/unit/test_recompute_modules.cpp): a small qwen3_moe (h 64, 4 MoE layers, 8
    // experts of 32, top-2) at s 16, tp 2 with SP, selective recomputation. Per layer the routed
    // parts 320 + 4096 + 3072 + 2112 = 9600 bytes and the pre-MLP norm's output 1024.
    check(Memest.enumNames(memest_enum.MEMEST_ENUM_RECOMPUTE_MODULE).get(memest_recompute_module.MEMEST_RECOMPUTE_MODULE_MOE)
        .equals("moe"), "recompute module names");
    String smallMoe = "{\"model_type\": \"qwen3_moe\", \"hidden_size\": 64, \"num_hidden_layers\": 4,"
        + " \"num_attention_heads\": 4, \"num_key_value_heads\": 4, \"head_dim\": 16, \"intermediate_size\": 256,"
        + " \"moe_intermediate_size\": 32, \"num_experts\": 8, \"num_experts_per_tok\": 2, \"vocab_size\": 100,"
        + " \"max_position_embeddings\": 64, \"decoder_sparse_step\": 1, \"mlp_only_layers\": [],"
        + " \"tie_word_embeddings\": false}";
    PretrainRequest rm = new PretrainRequest();
    rm.setModel(Memest.modelFromConfig(smallMoe));
    rm.setGpu(Memest.gpu("h100-80gb"));
    rm.setGpus(2); rm.setTp(2); rm.setPp(1); rm.setZero(1); rm.setSequence_parallel(1);
    rm.setSeq_len(16); rm.setMicro_batch(1); rm.setGlobal_batch(4);
    rm.setFramework(memest_framework.MEMEST_FRAMEWORK_MEGATRON);
    rm.setRecompute(memest_recompute.MEMEST_RECOMPUTE_SELECTIVE);
    rm.setOptimizer_bytes(MemestNativeConstants.MEMEST_OPTIMIZER_BYTES_DERIVE);
    rm.setGrad_bytes(MemestNativeConstants.MEMEST_GRAD_BYTES_DERIVE);  // 1.11: as JSON without grad_dtype
    check(rm.getRecompute_modules() == 0, "recompute_modules default 0");
    Memest.Pretrain rmPlain = Memest.pretrain(rm);
    rm.setRecompute_modules(Memest.recomputeModuleBits("moe"));
    Memest.Pretrain rmMoe = Memest.pretrain(rm);
    check(rmPlain.stages().get(0).getActivations_bytes() - rmMoe.stages().get(0).getActivations_bytes() == 4 * 9600.0,
        "moe drops 4 x 9600: " + (rmPlain.stages().get(0).getActivations_bytes() - rmMoe.stages().get(0).getActivations_bytes()));
    rm.setRecompute_modules(Memest.recomputeModuleBits("layernorm", "moe"));
    Memest.Pretrain rmBoth = Memest.pretrain(rm);
    check(rmPlain.stages().get(0).getActivations_bytes() - rmBoth.stages().get(0).getActivations_bytes() == 4 * (9600.0 + 1024.0),
        "layernorm + moe drop 4 x 10624: " + (rmPlain.stages().get(0).getActivations_bytes() - rmBoth.stages().get(0).getActivations_bytes()));
    String rmJson = Memest.request("{\"mode\": \"pretrain\", \"model\": " + smallMoe + ", \"gpu\": \"h100-80gb\","
        + " \"parallel\": {\"gpus\": 2, \"tp\": 2, \"pp\": 1, \"zero\": 1, \"sp\": true},"
        + " \"training\": {\"framework\": \"megatron\", \"seq_len\": 16, \"micro_batch\": 1, \"global_batch\": 4,"
        + " \"recompute\": \"selective\", \"recompute_modules\": [\"layernorm\", \"moe\"]}}");
    check(jsonNumber(rmJson, "peak_bytes") == rmBoth.result().getPeak_bytes(),
        "typed == JSON recompute_modules peak: " + jsonNumber(rmJson, "peak_bytes") + " vs " + rmBoth.result().getPeak_bytes());
    check(rmJson.replaceAll("\\s+", "").contains("\"recompute_modules\":[\"layernorm\",\"moe\"]"), "echoed modules");
    expectError(() -> Memest.recomputeModuleBits("moe", "attn"), "invalid_argument", "training.recompute_modules[1]");
    rm.setRecompute_modules(Memest.recomputeModuleBits("mla_up_proj"));
    expectError(() -> Memest.pretrain(rm), "invalid_argument", "training.recompute_modules");
    rm.setRecompute_modules(Memest.recomputeModuleBits("moe"));
    rm.setFramework(memest_framework.MEMEST_FRAMEWORK_FSDP);
    expectError(() -> Memest.pretrain(rm), "invalid_argument", "training.recompute_modules");

    // 1.12: Liger-Kernel's fused RMSNorm and SwiGLU in the Hugging Face blocks through the typed
    // struct (the hand-derived values of tests/unit/test_liger.cpp): Llama-3.1-8B on one H100,
    // seq 2048, micro batch 1, global batch 8, no recomputation, ZeRO 0. Under pytorch 32 layers
    // save 61440 B per token less: 32 * 61440 * 2048 = 4026531840 B; under fsdp (torchtitan's
    // block, norms already fused) only the SiLU output, 32 * 2 * 14336 * 2048 = 1879048192 B.
    PretrainRequest lg = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    lg.setGpus(1); lg.setTp(1); lg.setPp(1); lg.setZero(0);
    lg.setSeq_len(2048); lg.setMicro_batch(1); lg.setGlobal_batch(8);
    lg.setRecompute(memest_recompute.MEMEST_RECOMPUTE_NONE);
    lg.setFramework(memest_framework.MEMEST_FRAMEWORK_PYTORCH);
    lg.setGrad_bytes(MemestNativeConstants.MEMEST_GRAD_BYTES_DERIVE);
    lg.setOptimizer_bytes(MemestNativeConstants.MEMEST_OPTIMIZER_BYTES_DERIVE);
    check(lg.getUse_liger_kernel() == 0, "use_liger_kernel default 0");
    double lgPlain = Memest.pretrain(lg).stages().get(0).getActivations_bytes();
    lg.setUse_liger_kernel(1);
    Memest.Pretrain lgOn = Memest.pretrain(lg);
    check(lgPlain - lgOn.stages().get(0).getActivations_bytes() == 4026531840.0,
        "liger drops 4026531840 under pytorch: " + (lgPlain - lgOn.stages().get(0).getActivations_bytes()));
    String lgJson = Memest.request("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
        + " \"parallel\": {\"gpus\": 1, \"tp\": 1, \"pp\": 1, \"zero\": 0},"
        + " \"training\": {\"framework\": \"pytorch\", \"seq_len\": 2048, \"micro_batch\": 1, \"global_batch\": 8,"
        + " \"recompute\": \"none\", \"use_liger_kernel\": true}}");
    check(jsonNumber(lgJson, "peak_bytes") == lgOn.result().getPeak_bytes(),
        "typed == JSON liger peak: " + jsonNumber(lgJson, "peak_bytes") + " vs " + lgOn.result().getPeak_bytes());
    check(lgJson.replaceAll("\\s+", "").contains("\"use_liger_kernel\":true"), "echoed use_liger_kernel");
    lg.setFramework(memest_framework.MEMEST_FRAMEWORK_FSDP);
    lg.setUse_liger_kernel(0);
    double lgFsdp = Memest.pretrain(lg).stages().get(0).getActivations_bytes();
    lg.setUse_liger_kernel(1);
    check(lgFsdp - Memest.pretrain(lg).stages().get(0).getActivations_bytes() == 1879048192.0, "liger drops 1879048192 under fsdp");
    lg.setUse_liger_kernel(2);
    expectError(() -> Memest.pretrain(lg), "invalid_argument", "training.use_liger_kernel");
    lg.setUse_liger_kernel(1);
    lg.setFramework(memest_framework.MEMEST_FRAMEWORK_MEGATRON);
    expectError(() -> Memest.pretrain(lg), "invalid_argument", "training.use_liger_kernel");

    // 1.15: how the optimizer stores what it updates (master_weights, optimizer_state_bytes: the
    // parts of a derived K) through the typed struct, on the hand-derived values of
    // tests/unit/test_optimizer_storage.cpp: Llama-3.1-8B (8,030,261,248 parameters) on 8 H100s,
    // megatron, zero 1 sharding K over 8, seq 2048, micro batch 1, global batch 8, no
    // recomputation. Stage optimizer bytes K * 8030261248 / 8: K 12 (fp32 master + fp32 moments)
    // 12045391872, K 10 (remainders) 10037826560 with a 2007565312-byte master, K 4 (no master,
    // bf16 moments) 4015130624.
    check(Memest.enumNames(memest_enum.MEMEST_ENUM_MASTER_WEIGHTS).equals(
        java.util.Arrays.asList("auto", "fp32", "bf16", "fp16", "remainder", "none")), "master_weights names");
    check(Memest.enumValue(memest_enum.MEMEST_ENUM_MASTER_WEIGHTS, "remainder")
        == memest_master_weights.MEMEST_MASTER_REMAINDER, "remainder value");
    PretrainRequest mwr = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    mwr.setGpus(8); mwr.setTp(1); mwr.setPp(1); mwr.setZero(1);
    mwr.setSeq_len(2048); mwr.setMicro_batch(1); mwr.setGlobal_batch(8);
    mwr.setRecompute(memest_recompute.MEMEST_RECOMPUTE_NONE);
    mwr.setFramework(memest_framework.MEMEST_FRAMEWORK_MEGATRON);
    mwr.setGrad_bytes(MemestNativeConstants.MEMEST_GRAD_BYTES_DERIVE);
    mwr.setOptimizer_bytes(MemestNativeConstants.MEMEST_OPTIMIZER_BYTES_DERIVE);
    check(mwr.getMaster_weights() == memest_master_weights.MEMEST_MASTER_AUTO, "master_weights default AUTO");
    check(mwr.getOptimizer_state_bytes() == 0, "optimizer_state_bytes default 0");
    Memest.Pretrain msBase = Memest.pretrain(mwr);
    check(msBase.stages().get(0).getOptimizer_bytes() == 12045391872.0,
        "K 12: " + msBase.stages().get(0).getOptimizer_bytes());
    check(msBase.stages().get(0).getMaster_weights_bytes() == 4015130624.0, "fp32 master 4015130624");
    mwr.setMaster_weights(memest_master_weights.MEMEST_MASTER_REMAINDER);
    Memest.Pretrain msRem = Memest.pretrain(mwr);
    check(msRem.stages().get(0).getOptimizer_bytes() == 10037826560.0,
        "K 10 with remainders: " + msRem.stages().get(0).getOptimizer_bytes());
    check(msRem.stages().get(0).getMaster_weights_bytes() == 2007565312.0,
        "remainders 2007565312: " + msRem.stages().get(0).getMaster_weights_bytes());
    String msJson = Memest.request("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
        + " \"parallel\": {\"gpus\": 8, \"tp\": 1, \"pp\": 1, \"zero\": 1},"
        + " \"training\": {\"framework\": \"megatron\", \"seq_len\": 2048, \"micro_batch\": 1, \"global_batch\": 8,"
        + " \"recompute\": \"none\", \"master_weights\": \"remainder\"}}");
    check(jsonNumber(msJson, "peak_bytes") == msRem.result().getPeak_bytes(),
        "typed == JSON remainder peak: " + jsonNumber(msJson, "peak_bytes") + " vs " + msRem.result().getPeak_bytes());
    check(jsonNumber(msJson, "master_weights_bytes") == 2007565312.0, "JSON remainders 2007565312");
    check(msJson.replaceAll("\\s+", "").contains("\"master_weights\":\"remainder\",\"optimizer_state_dtype\":\"fp32\""),
        "echoed master_weights / optimizer_state_dtype");
    mwr.setMaster_weights(memest_master_weights.MEMEST_MASTER_NONE);
    mwr.setOptimizer_state_bytes(2);
    Memest.Pretrain msBf16 = Memest.pretrain(mwr);
    check(msBf16.stages().get(0).getOptimizer_bytes() == 4015130624.0,
        "K 4 without a master, bf16 moments: " + msBf16.stages().get(0).getOptimizer_bytes());
    check(msBf16.stages().get(0).getMaster_weights_bytes() == 0, "no master");
    String bf16Json = Memest.request("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
        + " \"parallel\": {\"gpus\": 8, \"tp\": 1, \"pp\": 1, \"zero\": 1},"
        + " \"training\": {\"framework\": \"megatron\", \"seq_len\": 2048, \"micro_batch\": 1, \"global_batch\": 8,"
        + " \"recompute\": \"none\", \"master_weights\": \"none\", \"optimizer_state_dtype\": \"bf16\"}}");
    check(jsonNumber(bf16Json, "peak_bytes") == msBf16.result().getPeak_bytes(),
        "typed == JSON no-master bf16 peak: " + jsonNumber(bf16Json, "peak_bytes") + " vs " + msBf16.result().getPeak_bytes());
    check(msBf16.result().getPeak_bytes() < msRem.result().getPeak_bytes()
        && msRem.result().getPeak_bytes() < msBase.result().getPeak_bytes(), "peaks fall with K");
    // refusals by field: K given whole beside them, a 3-byte dtype, past the last value, fsdp
    mwr.setOptimizer_bytes(12);
    expectError(() -> Memest.pretrain(mwr), "invalid_argument", "training.master_weights");
    mwr.setMaster_weights(memest_master_weights.MEMEST_MASTER_AUTO);
    expectError(() -> Memest.pretrain(mwr), "invalid_argument", "training.optimizer_state_dtype");
    mwr.setOptimizer_bytes(MemestNativeConstants.MEMEST_OPTIMIZER_BYTES_DERIVE);
    mwr.setOptimizer_state_bytes(3);
    expectError(() -> Memest.pretrain(mwr), "invalid_argument", "training.optimizer_state_dtype");
    mwr.setOptimizer_state_bytes(0);
    mwr.setMaster_weights(memest_master_weights.MEMEST_MASTER_COUNT);
    expectError(() -> Memest.pretrain(mwr), "invalid_argument", "training.master_weights");
    mwr.setMaster_weights(memest_master_weights.MEMEST_MASTER_FP32);
    mwr.setFramework(memest_framework.MEMEST_FRAMEWORK_FSDP);
    expectError(() -> Memest.pretrain(mwr), "invalid_argument", "training.master_weights");

    // the layout search, typed: the same ranking and prune counts as the JSON search mode
    PretrainRequest base = Memest.pretrainRequest("llama-3.1-8b", "a100-40gb");
    base.setGpus(64); base.setSeq_len(8192); base.setGlobal_batch(1024);
    Memest.Search found = Memest.search(Memest.searchRequest(base), 3);
    String searched = Memest.request("{\"mode\": \"search\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-40gb\","
        + " \"parallel\": {\"gpus\": 64}, \"training\": {\"seq_len\": 8192, \"global_batch\": 1024},"
        + " \"search\": {\"top\": 3}}");
    check(found.entries().size() == 3, "three layouts");
    check(jsonNumber(searched, "tflops_per_gpu") == found.entries().get(0).getTflops_per_gpu(), "best layout");
    check(jsonNumber(searched, "pruned_total") == found.result().getPruned_total().doubleValue(), "pruned total");
    long sum = 0;
    for (long n : found.pruned().values()) sum += n;
    check(sum == found.result().getPruned_total().longValue(), "prune counts add up");
    check(jsonNumber(searched, "oom") == found.pruned().get("oom"), "oom count");
    // an explicit shortlist: a bad layout is counted, not raised
    SearchRequest shortlist = Memest.searchRequest(base);
    LayoutArray layouts = new LayoutArray(2);
    Layout good4x2 = new Layout();
    good4x2.setTp(4); good4x2.setPp(2);
    Layout bad3 = new Layout();
    bad3.setTp(3);
    layouts.setitem(0, good4x2);
    layouts.setitem(1, bad3);
    shortlist.setLayouts(layouts, 2);
    Memest.Search listed = Memest.search(shortlist, 5);
    check(listed.entries().size() == 1 && listed.entries().get(0).getTp() == 4, "shortlist ranked");
    check(listed.pruned().get("tp_heads") == 1, "bad layout counted");

    List<String> models = Memest.modelPresets();
    check(models.contains("llama-3.1-8b") && Memest.gpuPresets().contains("h100-80gb"), "presets");
    for (String id : models) {
      ParamCount c = new ParamCount();  // sized by its constructor
      check(MemestNative.model_parameter_count(Memest.model(id), c) == 0 && c.getTotal() > 0, id);
    }
    stackChecks();
    compileChecks();
    throughputChecks();
    oomChecks();
    hybridChecks();
    launchChecks();
    System.out.println("java MemestTest: " + checks + " checks passed");
  }

  /** The training-stack fields (memest.h 1.2, docs/training-stack.md): an FSDP2 request with
   *  torchtitan's per-op recomputation and an unfused loss equals the JSON answer; refused
   *  combinations name their field. */
  static void stackChecks() throws Exception {
    PretrainRequest r = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    check(r.getFramework() == memest_framework.MEMEST_FRAMEWORK_MEGATRON && r.getRecompute_every() == 1,
        "stack defaults");
    r.setGpus(8); r.setZero(3); r.setSeq_len(4096); r.setMicro_batch(2); r.setGlobal_batch(16);
    r.setFramework(memest_framework.MEMEST_FRAMEWORK_FSDP);
    r.setRecompute(memest_recompute.MEMEST_RECOMPUTE_OP_SELECTIVE);
    r.setLoss(memest_loss.MEMEST_LOSS_UNFUSED);
    r.setOptimizer_bytes(MemestNativeConstants.MEMEST_OPTIMIZER_BYTES_DERIVE);  // as JSON derives K
    r.setGrad_bytes(MemestNativeConstants.MEMEST_GRAD_BYTES_DERIVE);  // 1.11: as JSON without grad_dtype
    Memest.Pretrain p = Memest.pretrain(r);
    String json = Memest.request("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
        + " \"parallel\": {\"gpus\": 8, \"zero\": 3}, \"training\": {\"seq_len\": 4096, \"micro_batch\": 2,"
        + " \"global_batch\": 16, \"framework\": \"fsdp\", \"recompute\": \"op_selective\", \"loss\": \"unfused\"}}");
    PretrainResult res = p.result();
    check(jsonNumber(json, "peak_bytes") == res.getPeak_bytes(), "fsdp: typed == JSON peak");
    check(jsonNumber(json, "peak_allocated_bytes") == res.getPeak_allocated_bytes(), "typed == JSON allocated");
    check(jsonNumber(json, "peak_reserved_bytes") == res.getPeak_reserved_bytes(), "typed == JSON reserved");
    check(jsonNumber(json, "host_bytes") == res.getHost_bytes(), "typed == JSON host");
    check(jsonNumber(json, "framework_buffer_bytes") == p.stages().get(0).getFramework_buffer_bytes(),
        "typed == JSON framework buffers");
    check(jsonNumber(json, "loss_bytes") == p.stages().get(0).getLoss_bytes(), "typed == JSON loss bytes");
    check(p.framework().equals("fsdp") && p.loss().equals("unfused")
        && json.contains("\"framework\": \"fsdp\"") && json.contains("\"loss\": \"unfused\""), "names");
    check(res.getPeak_allocated_bytes() > 0 && res.getPeak_allocated_bytes() < res.getPeak_reserved_bytes()
        && res.getPeak_reserved_bytes() == res.getPeak_bytes(), "allocated < reserved = peak");
    check(p.stages().get(0).getFramework_buffer_bytes() > 0, "FSDP buffers");
    check(Memest.enumNames(memest_enum.MEMEST_ENUM_FRAMEWORK).get(memest_framework.MEMEST_FRAMEWORK_FSDP).equals("fsdp"),
        "framework names from the library");

    // offloading the optimizer under DeepSpeed ZeRO-3: host memory appears, the GPU peak drops
    PretrainRequest ds = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    ds.setGpus(8); ds.setZero(3); ds.setSeq_len(4096);
    ds.setFramework(memest_framework.MEMEST_FRAMEWORK_DEEPSPEED);
    ds.setOptimizer(memest_optimizer.MEMEST_OPTIMIZER_ADAMW);
    ds.setOptimizer_bytes(MemestNativeConstants.MEMEST_OPTIMIZER_BYTES_DERIVE);
    ds.setGrad_bytes(MemestNativeConstants.MEMEST_GRAD_BYTES_DERIVE);  // 1.11: as JSON without grad_dtype
    double onGpu = Memest.pretrain(ds).result().getPeak_bytes();
    ds.setOffload_optimizer(1);
    ds.setDs_reduce_bucket_size(2e8);
    Memest.Pretrain off = Memest.pretrain(ds);
    check(off.result().getHost_bytes() > 0 && off.result().getPeak_bytes() < onGpu, "offload: host bytes, lower peak");

    // refused combinations name the field
    PretrainRequest bad = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    bad.setGpus(8);
    bad.setRecompute(memest_recompute.MEMEST_RECOMPUTE_OP_SELECTIVE);
    MemestException e = expectError(() -> Memest.pretrain(bad), "invalid_argument", "training.recompute");
    check(e.getMessage().contains("op_selective"), "the library's message");
    bad.setRecompute(memest_recompute.MEMEST_RECOMPUTE_NONE);
    bad.setFramework(memest_framework.MEMEST_FRAMEWORK_DEEPSPEED);
    bad.setOffload_params(1);
    expectError(() -> Memest.pretrain(bad), "invalid_argument", "training.offload.params");
    expectError(() -> Memest.request("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
        + " \"training\": {\"recompute\": \"op_selective\"}}"), "invalid_argument", "training.recompute");

    // 1.4's 16-bit loss: its name from the library; refused on the Llama preset, whose code
    // casts its logits to fp32 (logits_fp32); GPT2-XL under DeepSpeed fp16 (micro-batch 40):
    // 6 bytes per logit, 40 * 1024 * 50257 = 2058526720 logits = 12351160320 bytes
    check(Memest.enumNames(memest_enum.MEMEST_ENUM_LOSS).get(memest_loss.MEMEST_LOSS_UNFUSED_16BIT)
        .equals("unfused_16bit"), "unfused_16bit named by the library");
    bad.setOffload_params(0);
    bad.setLoss(memest_loss.MEMEST_LOSS_UNFUSED_16BIT);
    expectError(() -> Memest.pretrain(bad), "invalid_argument", "training.loss");
    String gpt2 = Memest.request("{\"mode\": \"pretrain\", \"gpu\": \"a100-40gb\", \"model\": {\"model_type\": \"gpt2\","
        + " \"n_embd\": 1600, \"n_layer\": 48, \"n_head\": 25, \"vocab_size\": 50257, \"n_positions\": 1024},"
        + " \"parallel\": {\"gpus\": 4, \"zero\": 3}, \"training\": {\"seq_len\": 1024, \"micro_batch\": 40,"
        + " \"framework\": \"deepspeed\", \"param_dtype\": \"fp16\", \"grad_dtype\": \"fp16\", \"recompute\": \"full\","
        + " \"flash_attention\": false, \"loss\": \"unfused_16bit\"}}");
    check(jsonNumber(gpt2, "loss_bytes") == 12351160320.0, "unfused_16bit: 6 bytes per fp16 logit");
  }

  /** The throughput model (1.5): a pretraining result's step time and its parts, which add up
   *  to the step; comm_overlap; the search entries' parts, ties, fp8 and compile options. */
  static void throughputChecks() throws Exception {
    List<String> partNames = Memest.enumNames(memest_enum.MEMEST_ENUM_STEP_PART);
    check(partNames.get(memest_step_part.MEMEST_STEP_COMPUTE).equals("compute"), "step part names from the library");
    check(Memest.enumNames(memest_enum.MEMEST_ENUM_OVERLAP).get(memest_overlap.MEMEST_OVERLAP_TP).equals("tp"),
        "overlap names from the library");
    PretrainRequest r = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    r.setGpus(16); r.setTp(2); r.setPp(2); r.setSeq_len(8192); r.setGlobal_batch(256);
    check(r.getComm_overlap() == MemestNativeConstants.MEMEST_OVERLAP_STACK_DEFAULT, "comm_overlap default");
    Memest.Pretrain p = Memest.pretrain(r);
    PretrainResult res = p.result();
    check(res.getStep_seconds() > 0 && res.getTokens_per_s() > 0 && res.getTflops_per_gpu() > 0, "throughput");
    check(res.getMfu() > 0 && res.getMfu() < 1, "mfu");
    java.util.Map<String, Double> parts = p.stepParts();
    check(List.copyOf(parts.keySet()).equals(partNames), "parts in the library's order");
    double sum = 0;
    for (double v : parts.values()) sum += v;
    check(Math.abs(sum - res.getStep_seconds()) <= 1e-9 * res.getStep_seconds(), "parts add up to the step: " + sum);
    check(parts.get("compute") == res.getCompute_seconds() && res.getCompute_seconds() > 0, "compute part");
    // typed == JSON
    String json = Memest.request("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
        + " \"parallel\": {\"gpus\": 16, \"tp\": 2, \"pp\": 2}, \"training\": {\"seq_len\": 8192, \"global_batch\": 256,"
        + " \"comm_overlap\": [\"dp\", \"tp\"]}}");
    r.setComm_overlap(Memest.overlapBits("dp", "tp"));
    Memest.Pretrain both = Memest.pretrain(r);
    check(jsonNumber(json, "step_seconds") == both.result().getStep_seconds(), "typed == JSON step_seconds");
    check(jsonNumber(json, "tp_comm") == both.result().getTp_comm_seconds(), "typed == JSON tp_comm");
    r.setComm_overlap(Memest.overlapBits());
    Memest.Pretrain none = Memest.pretrain(r);
    check(both.result().getTp_comm_seconds() < none.result().getTp_comm_seconds(), "tp overlap hides TP comm");
    check(both.result().getPeak_bytes() == none.result().getPeak_bytes(), "overlap leaves memory alone");
    expectError(() -> Memest.overlapBits("dp", "nvlink"), "invalid_argument", "training.comm_overlap");
    r.setGlobal_batch(0);
    check(Memest.pretrain(r).result().getStep_seconds() == 0, "no global batch, no step");

    // the MoE dispatcher (1.5): Qwen3-30B-A3B with ep 16 over two 8-GPU nodes; DeepEP sends a
    // token once per remote node, so the step's all-to-all time is lower; typed == JSON
    String deepepName = Memest.enumNames(memest_enum.MEMEST_ENUM_MOE_DISPATCHER)
        .get(memest_moe_dispatcher.MEMEST_MOE_DISPATCHER_DEEPEP);
    check(deepepName.equals("deepep"), "moe_dispatcher names from the library");
    PretrainRequest moe = Memest.pretrainRequest("qwen3-30b-a3b", "h100-80gb");
    check(moe.getMoe_dispatcher() == memest_moe_dispatcher.MEMEST_MOE_DISPATCHER_ALLTOALL, "moe_dispatcher default");
    moe.setGpus(16); moe.setEp(16); moe.setGlobal_batch(64);
    PretrainResult alltoall = Memest.pretrain(moe).result();
    moe.setMoe_dispatcher(memest_moe_dispatcher.MEMEST_MOE_DISPATCHER_DEEPEP);
    PretrainResult deepep = Memest.pretrain(moe).result();
    check(deepep.getEp_comm_seconds() > 0 && deepep.getEp_comm_seconds() < alltoall.getEp_comm_seconds(),
        "deepep lowers ep_comm: " + deepep.getEp_comm_seconds() + " vs " + alltoall.getEp_comm_seconds());
    check(deepep.getPeak_bytes() == alltoall.getPeak_bytes(), "the dispatcher leaves memory alone");
    String moeJson = Memest.request("{\"mode\": \"pretrain\", \"model\": \"qwen3-30b-a3b\", \"gpu\": \"h100-80gb\","
        + " \"parallel\": {\"gpus\": 16, \"ep\": 16}, \"training\": {\"global_batch\": 64,"
        + " \"moe_dispatcher\": \"" + deepepName + "\"}}");
    check(jsonNumber(moeJson, "ep_comm") == deepep.getEp_comm_seconds(), "typed == JSON ep_comm");

    // the attention kernels (1.5): FSDP's default (auto) runs FlashAttention-2, whose kernels
    // on an H100 are slower than the fused ones: more compute, the same memory; typed == JSON
    String fusedName = Memest.enumNames(memest_enum.MEMEST_ENUM_ATTENTION_KERNEL)
        .get(memest_attention_kernel.MEMEST_ATTENTION_FUSED);
    check(fusedName.equals("fused"), "attention_kernel names from the library");
    PretrainRequest attn = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    check(attn.getAttention_kernel() == memest_attention_kernel.MEMEST_ATTENTION_AUTO, "attention_kernel default");
    attn.setGpus(8); attn.setSeq_len(8192); attn.setGlobal_batch(8);
    attn.setFramework(memest_framework.MEMEST_FRAMEWORK_FSDP);
    PretrainResult auto = Memest.pretrain(attn).result();
    attn.setAttention_kernel(memest_attention_kernel.MEMEST_ATTENTION_FLASH2);
    PretrainResult flash2 = Memest.pretrain(attn).result();
    attn.setAttention_kernel(memest_attention_kernel.MEMEST_ATTENTION_FUSED);
    PretrainResult fused = Memest.pretrain(attn).result();
    check(auto.getCompute_seconds() == flash2.getCompute_seconds(), "fsdp's auto is flash2");
    check(flash2.getCompute_seconds() > fused.getCompute_seconds() && fused.getCompute_seconds() > 0,
        "flash2 raises compute: " + flash2.getCompute_seconds() + " vs " + fused.getCompute_seconds());
    check(flash2.getPeak_bytes() == fused.getPeak_bytes(), "the kernels leave memory alone");
    String attnJson = Memest.request("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
        + " \"parallel\": {\"gpus\": 8}, \"training\": {\"seq_len\": 8192, \"global_batch\": 8,"
        + " \"framework\": \"fsdp\", \"attention_kernel\": \"" + fusedName + "\"}}");
    check(jsonNumber(attnJson, "compute") == fused.getCompute_seconds(), "typed == JSON compute");
    // 1.17: a Triton FlashAttention kernel (llm-foundry's MPT) at its share of FlashAttention-2's
    attn.setAttention_kernel(memest_attention_kernel.MEMEST_ATTENTION_TRITON);
    PretrainResult triton = Memest.pretrain(attn).result();
    check(Memest.enumNames(memest_enum.MEMEST_ENUM_ATTENTION_KERNEL)
        .get(memest_attention_kernel.MEMEST_ATTENTION_TRITON).equals("triton"), "triton's name");
    check(triton.getCompute_seconds() > flash2.getCompute_seconds(),
        "triton raises compute over flash2: " + triton.getCompute_seconds() + " vs " + flash2.getCompute_seconds());
    check(triton.getPeak_bytes() == flash2.getPeak_bytes(), "triton leaves memory alone");

    // search: fp8 off and on, the breakdown of every entry, ties with the best
    PretrainRequest base = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    base.setGpus(16); base.setSeq_len(4096); base.setGlobal_batch(256);
    SearchRequest s = Memest.searchRequest(base);
    s.setFp8_options(3);
    Memest.Search found = Memest.search(s, 5000);
    check(found.result().getTie_margin() > 0, "tie margin");
    boolean sawFp8 = false, sawBf16 = false;
    for (SearchEntry e : found.entries()) {
      double total = 0;
      for (double v : Memest.stepParts(e).values()) total += v;
      check(Math.abs(total - e.getStep_seconds()) <= 1e-9 * e.getStep_seconds(), "entry parts add up");
      check((e.getTie() == 1) == (e.getGap_to_best() <= found.result().getTie_margin()), "tie");
      if (e.getFp8() == 1) sawFp8 = true; else sawBf16 = true;
    }
    check(found.entries().get(0).getGap_to_best() == 0, "the best has no gap");
    check(sawFp8 && sawBf16, "fp8 options searched");
  }

  /** The first number of a JSON array value: "key": [a, b] -> a (index 0) or b (index 1). */
  static double jsonArrayNumber(String json, String key, int index) {
    String p = "\"" + key + "\": [";
    int i = json.indexOf(p);
    check(i >= 0, "no " + key + " in the response");
    String body = json.substring(i + p.length(), json.indexOf(']', i));
    return Double.parseDouble(body.split(",")[index].trim());
  }

  /** 1.6: what a result states (the torch.cuda and nvidia-smi figures, the peak's 90 % band, the
   *  probability of running out of memory, the margin), the precision-policy and loss fields of
   *  the request, fsdp1, adamw_foreach, paged_adamw_32bit, quantize_lm_head,
   *  final_logit_softcapping and the search's max_oom_probability: typed == JSON, and each
   *  refusal names its field. */
  static void oomChecks() throws Exception {
    final double z95 = 1.6448536269514722;  // the 90 % band's half-width (memest.h: 1.645)
    final double sigma = MemestNativeConstants.MEMEST_PEAK_ERROR_SIGMA;
    String enums = Memest.request("{\"mode\": \"enums\"}");
    check(jsonNumber(enums, "peak_error_sigma") == sigma && sigma > 0, "sigma as in the enums mode");
    check(jsonNumber(enums, "search_max_oom_probability") == MemestNativeConstants.MEMEST_SEARCH_MAX_OOM_PROBABILITY,
        "search default as in the enums mode");
    double fits = MemestNativeConstants.MEMEST_PEAK_FITS_FRACTION;
    check(fits <= Math.exp(-z95 * sigma) && Math.exp(-z95 * sigma) < fits + 0.01, "fits band from sigma");
    check(Memest.enumNames(memest_enum.MEMEST_ENUM_FRAMEWORK).get(memest_framework.MEMEST_FRAMEWORK_FSDP1).equals("fsdp1")
        && Memest.enumNames(memest_enum.MEMEST_ENUM_FRAMEWORK).size() == memest_framework.MEMEST_FRAMEWORK_COUNT,
        "fsdp1 named by the library");
    List<String> optimizers = Memest.enumNames(memest_enum.MEMEST_ENUM_OPTIMIZER);
    check(optimizers.get(memest_optimizer.MEMEST_OPTIMIZER_ADAMW_FOREACH).equals("adamw_foreach")
        && optimizers.get(memest_optimizer.MEMEST_OPTIMIZER_PAGED_ADAMW_32BIT).equals("paged_adamw_32bit")
        && optimizers.size() == memest_optimizer.MEMEST_OPTIMIZER_COUNT, "1.6 optimizers named by the library");

    // Llama-3.1-8B on 8 x H100 under FSDP1 with accumulation (32 / 8 = 4 micro-batches)
    PretrainRequest r = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    check(r.getLoss_parallel() == 1 && r.getAutocast() == -1 && r.getNo_sync() == -1 && r.getReduce_bytes() == 0
        && r.getFp8_all_gather() == 0 && r.getQuantize_lm_head() == 0 && r.getLogits_held() == 0, "1.6 defaults");
    r.setGpus(8); r.setZero(3); r.setSeq_len(4096); r.setMicro_batch(1); r.setGlobal_batch(32);
    r.setFramework(memest_framework.MEMEST_FRAMEWORK_FSDP1);
    r.setOptimizer_bytes(MemestNativeConstants.MEMEST_OPTIMIZER_BYTES_DERIVE);
    r.setGrad_bytes(MemestNativeConstants.MEMEST_GRAD_BYTES_DERIVE);  // 1.11: as JSON without grad_dtype
    Memest.Pretrain p = Memest.pretrain(r);
    PretrainResult res = p.result();
    String json = Memest.request("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
        + " \"parallel\": {\"gpus\": 8, \"zero\": 3}, \"training\": {\"seq_len\": 4096, \"micro_batch\": 1,"
        + " \"global_batch\": 32, \"framework\": \"fsdp1\"}}");
    double prob = res.getOom_probability();
    check(p.framework().equals("fsdp1") && prob > 0 && prob < 1, "fsdp1 oom_probability " + prob);
    check(jsonNumber(json, "oom_probability") == prob, "typed == JSON oom_probability");
    check(jsonNumber(json, "margin_bytes") == res.getMargin_bytes()
        && res.getMargin_bytes() == res.getCapacity_bytes() - res.getPeak_bytes(), "margin = capacity - peak");
    check((prob < 0.5) == (res.getMargin_bytes() > 0), "P(OOM) < 1/2 exactly when the peak is below capacity");
    check(jsonArrayNumber(json, "peak_band_bytes", 0) == res.getPeak_low_bytes()
        && jsonArrayNumber(json, "peak_band_bytes", 1) == res.getPeak_high_bytes(), "typed == JSON band");
    check(Math.abs(res.getPeak_high_bytes() / res.getPeak_bytes() - Math.exp(z95 * sigma)) < 1e-12
        && Math.abs(res.getPeak_low_bytes() / res.getPeak_bytes() - Math.exp(-z95 * sigma)) < 1e-12, "the 90 % band");
    Stage peak = p.stages().get(res.getPeak_stage());
    double context = peak.getContext_bytes();
    check(context > 0 && res.getTorch_max_memory_reserved_bytes() == res.getPeak_reserved_bytes() - context
        && res.getTorch_max_memory_allocated_bytes() == res.getPeak_allocated_bytes() - context, "torch.cuda's figures");
    check(res.getNvidia_smi_bytes() == res.getPeak_reserved_bytes() + peak.getPaged_bytes(), "nvidia-smi");
    check(jsonNumber(json, "torch_max_memory_allocated_bytes") == res.getTorch_max_memory_allocated_bytes()
        && jsonNumber(json, "torch_max_memory_reserved_bytes") == res.getTorch_max_memory_reserved_bytes()
        && jsonNumber(json, "nvidia_smi_bytes") == res.getNvidia_smi_bytes(), "typed == JSON torch / nvidia-smi");
    check(peak.getNvidia_smi_bytes() == res.getNvidia_smi_bytes()
        && peak.getTorch_max_memory_reserved_bytes() == res.getTorch_max_memory_reserved_bytes(), "the peak stage's");
    check(jsonNumber(json, "unsharded_root_bytes") == peak.getUnsharded_root_bytes(), "typed == JSON root unit");
    // no_sync (fsdp1's default) keeps the unsharded gradients; the root unit is the weights' difference to FSDP2
    r.setNo_sync(0);
    Memest.Pretrain synced = Memest.pretrain(r);
    check(p.stages().get(0).getGradients_bytes() > synced.stages().get(0).getGradients_bytes(), "no_sync keeps gradients");
    r.setFramework(memest_framework.MEMEST_FRAMEWORK_FSDP);
    Memest.Pretrain fsdp2 = Memest.pretrain(r);
    double root = synced.stages().get(0).getUnsharded_root_bytes();
    check(root > 0 && fsdp2.stages().get(0).getUnsharded_root_bytes() == 0
        && synced.stages().get(0).getWeights_bytes() - fsdp2.stages().get(0).getWeights_bytes() == root,
        "fsdp1's root unit: " + root);
    r.setNo_sync(2);
    expectError(() -> Memest.pretrain(r), "invalid_argument", "training.no_sync");
    r.setNo_sync(-1);

    // reduce_dtype: fp32 reduce-scatter of bf16 gradients; a value that is no dtype is refused
    r.setGlobal_batch(8); r.setGrad_bytes(2);
    Memest.Pretrain bf16 = Memest.pretrain(r);
    r.setReduce_bytes(4);
    Memest.Pretrain fp32 = Memest.pretrain(r);
    check(fp32.stages().get(0).getFramework_buffer_bytes() > bf16.stages().get(0).getFramework_buffer_bytes(),
        "reduce_dtype fp32 grows the reduce-scatter buffer");
    r.setReduce_bytes(3);
    expectError(() -> Memest.pretrain(r), "invalid_argument", "training.reduce_dtype");
    r.setReduce_bytes(0); r.setGrad_bytes(4);
    // fp8_all_gather: one byte per gathered weight
    r.setFp8(1);
    Memest.Pretrain gatherBf16 = Memest.pretrain(r);
    r.setFp8_all_gather(1);
    Memest.Pretrain gatherFp8 = Memest.pretrain(r);
    check(gatherFp8.stages().get(0).getFramework_buffer_bytes() < gatherBf16.stages().get(0).getFramework_buffer_bytes(),
        "fp8_all_gather shrinks the all-gather buffer");
    r.setFp8(0);
    expectError(() -> Memest.pretrain(r), "invalid_argument", "training.fp8_all_gather");
    r.setFp8_all_gather(0);
    // loss_parallel off under tp 2: the whole vocabulary's logits
    r.setTp(2);
    Memest.Pretrain vocabParallel = Memest.pretrain(r);
    r.setLoss_parallel(0);
    Memest.Pretrain gathered = Memest.pretrain(r);
    check(gathered.stages().get(0).getLoss_bytes() > vocabParallel.stages().get(0).getLoss_bytes(), "loss_parallel off");
    r.setFramework(memest_framework.MEMEST_FRAMEWORK_MEGATRON);
    expectError(() -> Memest.pretrain(r), "invalid_argument", "training.loss_parallel");

    // one GPU under plain PyTorch: adamw_foreach, paged_adamw_32bit, logits_held, autocast
    PretrainRequest one = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    one.setGpus(1); one.setSeq_len(2048); one.setGlobal_batch(1);
    one.setFramework(memest_framework.MEMEST_FRAMEWORK_PYTORCH);
    one.setOptimizer_bytes(MemestNativeConstants.MEMEST_OPTIMIZER_BYTES_DERIVE);
    one.setGrad_bytes(MemestNativeConstants.MEMEST_GRAD_BYTES_DERIVE);  // 1.11: as JSON without grad_dtype
    one.setOptimizer(memest_optimizer.MEMEST_OPTIMIZER_ADAMW);
    Memest.Pretrain adamw = Memest.pretrain(one);
    one.setOptimizer(memest_optimizer.MEMEST_OPTIMIZER_ADAMW_FOREACH);
    Memest.Pretrain foreach = Memest.pretrain(one);
    double step = foreach.stages().get(0).getOptimizer_step_bytes();
    check(adamw.stages().get(0).getOptimizer_step_bytes() == 0 && step > 0
        && foreach.result().getPeak_bytes() > adamw.result().getPeak_bytes(), "adamw_foreach's step temporaries " + step);
    one.setOptimizer(memest_optimizer.MEMEST_OPTIMIZER_PAGED_ADAMW_32BIT);
    Memest.Pretrain paged = Memest.pretrain(one);
    double pagedBytes = paged.stages().get(0).getPaged_bytes();
    check(pagedBytes > 0 && paged.result().getNvidia_smi_bytes() == paged.result().getPeak_reserved_bytes() + pagedBytes,
        "paged_adamw_32bit: nvidia-smi = reserved + paged");
    one.setOptimizer(memest_optimizer.MEMEST_OPTIMIZER_ADAMW);
    one.setLogits_held(1);
    Memest.Pretrain held = Memest.pretrain(one);
    check(held.stages().get(0).getLoss_bytes() > adamw.stages().get(0).getLoss_bytes(), "logits_held");
    one.setLogits_held(0);
    // qlora with the (untied) LM head in NF4 too; LoRA refused
    one.setAdapter(memest_adapter.MEMEST_ADAPTER_QLORA);
    Memest.Pretrain qlora = Memest.pretrain(one);
    one.setQuantize_lm_head(1);
    Memest.Pretrain qhead = Memest.pretrain(one);
    check(qhead.stages().get(0).getBase_weights_bytes() < qlora.stages().get(0).getBase_weights_bytes(), "quantize_lm_head");
    one.setAdapter(memest_adapter.MEMEST_ADAPTER_LORA);
    expectError(() -> Memest.pretrain(one), "invalid_argument", "training.adapter.quantize_lm_head");
    // autocast off: gpt2's fp32 parameters compute in fp32
    PretrainRequest g = Memest.pretrainRequest("gpt2", "h100-80gb");
    g.setGpus(1); g.setSeq_len(1024); g.setGlobal_batch(1); g.setParam_bytes(4);
    g.setFramework(memest_framework.MEMEST_FRAMEWORK_PYTORCH);
    g.setOptimizer_bytes(MemestNativeConstants.MEMEST_OPTIMIZER_BYTES_DERIVE);
    g.setGrad_bytes(MemestNativeConstants.MEMEST_GRAD_BYTES_DERIVE);  // 1.11: as JSON without grad_dtype
    Memest.Pretrain autocast = Memest.pretrain(g);
    g.setAutocast(0);
    Memest.Pretrain pure = Memest.pretrain(g);
    check(pure.stages().get(0).getActivations_bytes() > autocast.stages().get(0).getActivations_bytes(), "autocast off");
    g.setAutocast(2);
    expectError(() -> Memest.pretrain(g), "invalid_argument", "training.autocast");

    // final_logit_softcapping: Gemma 2's preset and a config
    check(Memest.model("gemma-2-9b").getFinal_logit_softcapping() == 30.0
        && Memest.model("llama-3.1-8b").getFinal_logit_softcapping() == 0, "final_logit_softcapping");
    expectError(() -> Memest.modelFromConfig("{\"model_type\": \"llama\", \"hidden_size\": 2048, \"intermediate_size\": 5632,"
        + " \"num_attention_heads\": 32, \"num_hidden_layers\": 22, \"vocab_size\": 32000, \"final_logit_softcapping\": -1}"),
        "invalid_argument", "model.final_logit_softcapping");

    // the search: max_oom_probability, and each entry's probability, margin and band
    PretrainRequest base = Memest.pretrainRequest("llama-3.1-8b", "a100-40gb");
    base.setGpus(8); base.setSeq_len(8192); base.setGlobal_batch(64);
    SearchRequest s = Memest.searchRequest(base);
    check(s.getMax_oom_probability() == MemestNativeConstants.MEMEST_SEARCH_MAX_OOM_PROBABILITY, "search default");
    Memest.Search byDefault = Memest.search(s, 1000);
    s.setMax_oom_probability(0.01);
    Memest.Search strict = Memest.search(s, 1000);
    check(strict.entries().size() > 0 && strict.entries().size() < byDefault.entries().size()
        && strict.pruned().get("oom") > byDefault.pruned().get("oom"), "a stricter limit ranks fewer");
    for (SearchEntry e : strict.entries()) {
      check(e.getOom_probability() >= 0 && e.getOom_probability() <= 0.01, "entry within the limit");
      check(e.getMargin_bytes() == e.getCapacity_bytes() - e.getPeak_bytes(), "entry margin");
      check(Math.abs(e.getPeak_high_bytes() / e.getPeak_bytes() - Math.exp(z95 * sigma)) < 1e-12, "entry band");
    }
    String searched = Memest.request("{\"mode\": \"search\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-40gb\","
        + " \"parallel\": {\"gpus\": 8}, \"training\": {\"seq_len\": 8192, \"global_batch\": 64},"
        + " \"search\": {\"top\": 1000, \"max_oom_probability\": 0.01}}");
    check(jsonNumber(searched, "oom_probability") == strict.entries().get(0).getOom_probability()
        && jsonNumber(searched, "margin_bytes") == strict.entries().get(0).getMargin_bytes()
        && jsonNumber(searched, "peak_high_bytes") == strict.entries().get(0).getPeak_high_bytes()
        && jsonNumber(searched, "ranked") == strict.result().getRanked().doubleValue(), "typed == JSON search");
    s.setMax_oom_probability(2.0);
    expectError(() -> Memest.search(s, 10), "invalid_argument", "search.max_oom_probability");
    s.setMax_oom_probability(0);
    expectError(() -> Memest.search(s, 10), "invalid_argument", "search.max_oom_probability");
  }

  /** What torch.compile compiles (memest_compile, 1.4) in the int field compile. Llama-3.1-8B on
   *  one H100 under plain PyTorch, s = 2048, b = 1: the unfused loss on 2048 x 128256 =
   *  262668288 bf16 logits keeps 12 B/logit eager (3152019456 bytes), 4 compiled (1050673152). */
  static void compileChecks() throws Exception {
    check(Memest.enumNames(memest_enum.MEMEST_ENUM_COMPILE).get(memest_compile.MEMEST_COMPILE_MODEL).equals("model"),
        "compile names from the library");
    int[] parts = {memest_compile.MEMEST_COMPILE_NONE, memest_compile.MEMEST_COMPILE_ALL,
        memest_compile.MEMEST_COMPILE_MODEL, memest_compile.MEMEST_COMPILE_LOSS};
    double[] loss = {3152019456.0, 1050673152.0, 3152019456.0, 1050673152.0};
    for (int i = 0; i < parts.length; i++) {
      PretrainRequest r = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
      r.setGpus(1); r.setTp(1); r.setPp(1); r.setSeq_len(2048); r.setMicro_batch(1);
      r.setFramework(memest_framework.MEMEST_FRAMEWORK_PYTORCH);
      r.setCompile(parts[i]);
      check(Memest.pretrain(r).stages().get(0).getLoss_bytes() == loss[i], "compile " + parts[i] + " loss bytes");
    }
    PretrainRequest bad = Memest.pretrainRequest("llama-3.1-8b", "h100-80gb");
    bad.setGpus(1); bad.setTp(1); bad.setPp(1);
    bad.setFramework(memest_framework.MEMEST_FRAMEWORK_PYTORCH);
    bad.setCompile(memest_compile.MEMEST_COMPILE_COUNT);
    expectError(() -> Memest.pretrain(bad), "invalid_argument", "training.compile");
    bad.setFramework(memest_framework.MEMEST_FRAMEWORK_MEGATRON);
    bad.setCompile(memest_compile.MEMEST_COMPILE_MODEL);
    expectError(() -> Memest.pretrain(bad), "invalid_argument", "training.compile");
  }

  /** 1.8: a hybrid model through the typed structs. The tiny Nemotron-H derived by hand in
   *  tests/unit/test_hybrid.cpp (88472 parameters, mixers "M-A-", MLPs "-D-D"), its config.json
   *  with Python's bare Infinity as Nemotron-H's released config writes time_step_limit. */
  static final String TINY_NEMOTRON_H = "{\"model_type\": \"nemotron_h\", \"hidden_size\": 64,"
      + " \"num_hidden_layers\": 4, \"hybrid_override_pattern\": \"M-*-\", \"num_attention_heads\": 4,"
      + " \"num_key_value_heads\": 2, \"head_dim\": 16, \"intermediate_size\": 128, \"vocab_size\": 100,"
      + " \"mamba_num_heads\": 8, \"mamba_head_dim\": 16, \"ssm_state_size\": 16, \"n_groups\": 2,"
      + " \"conv_kernel\": 4, \"use_bias\": false, \"use_conv_bias\": true, \"mlp_bias\": false,"
      + " \"attention_bias\": false, \"tie_word_embeddings\": false, \"time_step_limit\": [0.0, Infinity]}";

  static void hybridChecks() throws Exception {
    Model m = Memest.modelFromConfig(TINY_NEMOTRON_H);
    // the char[MEMEST_MAX_PATTERN_LAYERS + 1] arrays as Java strings
    check(m.getMixer_pattern().equals("M-A-"), "mixer_pattern " + m.getMixer_pattern());
    check(m.getMlp_pattern().equals("-D-D"), "mlp_pattern " + m.getMlp_pattern());
    check(m.getMamba_num_heads() == 8 && m.getMamba_head_dim() == 16 && m.getMamba_state_size() == 16
        && m.getMamba_groups() == 2 && m.getMamba_conv_kernel() == 4, "Mamba-2 dimensions");
    check(m.getMamba_proj_bias() == 0 && m.getMamba_conv_bias() == 1 && m.getMamba_norm() == 1, "Mamba-2 switches");
    check(m.getLinear_value_heads() == 0 && m.getAttention_output_gate() == 0, "no gated DeltaNet");
    check(Memest.model("llama-3.1-8b").getMixer_pattern().isEmpty(), "a preset has no pattern");
    check(m.getMamba_dt_rank() == 0, "no Mamba-1 layers: dt_rank 0");
    // 1.13: the tiny Jamba of tests/unit/test_hybrid.cpp, Mamba-1 layers ('S'), 281960 parameters
    Model jamba = Memest.modelFromConfig("{\"model_type\": \"jamba\", \"hidden_size\": 64,"
        + " \"num_hidden_layers\": 4, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
        + " \"intermediate_size\": 96, \"vocab_size\": 100, \"attn_layer_period\": 2,"
        + " \"attn_layer_offset\": 1, \"expert_layer_period\": 2, \"expert_layer_offset\": 1,"
        + " \"num_experts\": 4, \"num_experts_per_tok\": 2, \"mamba_expand\": 2, \"mamba_d_state\": 8,"
        + " \"mamba_d_conv\": 4, \"mamba_dt_rank\": \"auto\", \"tie_word_embeddings\": false}");
    check(jamba.getMixer_pattern().equals("SASA") && jamba.getMamba_dt_rank() == 4
        && jamba.getMamba_num_heads() == 128 && jamba.getMamba_head_dim() == 1, "Mamba-1 fields");
    ParamCount jambaCount = new ParamCount();
    check(MemestNative.model_parameter_count(jamba, jambaCount) == memest_status.MEMEST_OK
        && jambaCount.getTotal() == 281960.0, "281960 Jamba parameters, got " + jambaCount.getTotal());
    ParamCount count = new ParamCount();
    check(MemestNative.model_parameter_count(m, count) == memest_status.MEMEST_OK, "parameter count");
    check(count.getTotal() == 88472.0 && count.getActive() == 88472.0, "88472 parameters, got " + count.getTotal());

    PretrainRequest r = new PretrainRequest();
    r.setModel(m);
    r.setGpu(Memest.gpu("h100-80gb"));
    r.setGpus(1); r.setTp(1); r.setCp(1); r.setPp(1); r.setVpp(1);
    r.setSeq_len(256); r.setMicro_batch(1); r.setGlobal_batch(4);
    Memest.Pretrain p = Memest.pretrain(r);
    check(p.result().getNum_parameters() == 88472.0, "pretrain parameters " + p.result().getNum_parameters());
    check(p.stages().size() == 1 && p.stages().get(0).getLayers() == 4, "one stage of 4 layers");
    String json = Memest.request("{\"mode\": \"pretrain\", \"model\": " + TINY_NEMOTRON_H
        + ", \"gpu\": \"h100-80gb\", \"parallel\": {\"gpus\": 1, \"tp\": 1, \"cp\": 1, \"pp\": 1, \"vpp\": 1},"
        + " \"training\": {\"seq_len\": 256, \"micro_batch\": 1, \"global_batch\": 4}}");
    check(json.contains("\"mixer_pattern\": \"M-A-\"") && json.contains("\"mlp_pattern\": \"-D-D\""),
        "the JSON model echoes the patterns");
    check(jsonNumber(json, "num_parameters") == 88472.0, "JSON parameters");
    check(jsonNumber(json, "estimate_bytes") == p.result().getEstimate_bytes(), "typed == JSON estimate (hybrid)");
    check(jsonNumber(json, "peak_bytes") == p.result().getPeak_bytes(), "typed == JSON peak (hybrid)");
    // context parallelism over the Mamba-2 layer: Megatron-Core's all-to-all head split (its
    // all-to-alls in the CP part; typed == JSON), refused by name under FSDP
    r.setGpus(2); r.setCp(2);
    Memest.Pretrain cp = Memest.pretrain(r);
    String cpJson = Memest.request("{\"mode\": \"pretrain\", \"model\": " + TINY_NEMOTRON_H
        + ", \"gpu\": \"h100-80gb\", \"parallel\": {\"gpus\": 2, \"cp\": 2},"
        + " \"training\": {\"seq_len\": 256, \"micro_batch\": 1, \"global_batch\": 4}}");
    check(cp.result().getCp_comm_seconds() > 0
        && jsonNumber(cpJson, "cp_comm") == cp.result().getCp_comm_seconds(), "cp over Mamba-2: typed == JSON");
    r.setFramework(memest_framework.MEMEST_FRAMEWORK_FSDP);
    expectError(() -> Memest.pretrain(r), "unsupported", "parallel.cp");
    r.setFramework(memest_framework.MEMEST_FRAMEWORK_MEGATRON);
    // LoRA (peft) on the hybrid: q_proj 1024 + v_proj 768 on its attention layer, up_proj and
    // down_proj 1536 each on its two MLP layers: 7936 (tests/unit/test_hybrid.cpp)
    String lora = Memest.request("{\"mode\": \"pretrain\", \"model\": " + TINY_NEMOTRON_H
        + ", \"gpu\": \"h100-80gb\", \"parallel\": {\"gpus\": 1}, \"training\": {\"framework\": \"pytorch\","
        + " \"seq_len\": 256, \"global_batch\": 4, \"adapter\": {\"type\": \"lora\", \"rank\": 8,"
        + " \"targets\": [\"q_proj\", \"v_proj\", \"up_proj\", \"down_proj\"]}}}");
    check(jsonNumber(lora, "trainable_parameters") == 7936.0, "LoRA on a hybrid: 7936 adapter parameters");
    // 1.14: in_proj and out_proj on the Mamba-2 mixer under Megatron (Megatron-Bridge's
    // Nemotron-H targets): 2560 + 2 x 3072 + 4672 = 13376 (tests/unit/test_hybrid.cpp)
    check(memest_lora_target.MEMEST_LORA_IN_PROJ == 10
        && Memest.enumNames(memest_enum.MEMEST_ENUM_LORA_TARGET).get(11).equals("out_proj"),
        "lora targets in_proj (10) and out_proj (11)");
    String bridge = Memest.request("{\"mode\": \"pretrain\", \"model\": " + TINY_NEMOTRON_H
        + ", \"gpu\": \"h100-80gb\", \"parallel\": {\"gpus\": 1}, \"training\": {\"framework\": \"megatron\","
        + " \"seq_len\": 256, \"global_batch\": 4, \"adapter\": {\"type\": \"lora\", \"rank\": 8, \"dtype\": \"bf16\","
        + " \"targets\": [\"q_proj\", \"o_proj\", \"up_proj\", \"down_proj\", \"in_proj\", \"out_proj\"]}}}");
    check(jsonNumber(bridge, "trainable_parameters") == 13376.0, "Megatron LoRA on the mixers: 13376");

    // the setter copies at most MEMEST_MAX_PATTERN_LAYERS characters and ends the array
    Model hand = new Model();
    hand.setMixer_pattern("MA");
    check(hand.getMixer_pattern().equals("MA"), "mixer_pattern set and read back");
    String longest = "A".repeat(MemestNativeConstants.MEMEST_MAX_PATTERN_LAYERS);
    hand.setMlp_pattern(longest + "DDD");
    check(hand.getMlp_pattern().equals(longest), "a pattern past the array is cut at its end");
    check(hand.getMixer_pattern().equals("MA"), "the arrays do not overlap");
  }

  /** The JSON object (or array) that follows "key": in a response text, by bracket matching
   *  (strings skipped): a part of the response to look for fields in. */
  static String jsonSection(String json, String key) {
    String p = "\"" + key + "\": ";
    int i = json.indexOf(p);
    check(i >= 0, "no " + key + " in the response");
    int start = i + p.length(), depth = 0;
    boolean inString = false;
    for (int j = start; j < json.length(); j++) {
      char c = json.charAt(j);
      if (inString) {
        if (c == '\\') j++;
        else if (c == '"') inString = false;
      } else if (c == '"') {
        inString = true;
      } else if (c == '{' || c == '[') {
        depth++;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return json.substring(start, j + 1);
      }
    }
    throw new AssertionError("unterminated " + key);
  }

  /** Launch files (tests/data/launch, from the repository root): Memest.importLaunch on a
   *  torchtitan TOML and an axolotl QLoRA YAML, the errors naming gpu and files[0], and
   *  Memest.emitLaunch's Megatron flags. */
  static void launchChecks() throws Exception {
    java.nio.file.Path titan = java.nio.file.Path.of("tests/data/launch/torchtitan/llama3-8b-64xa100-op-sac/llama3_8b.toml");
    java.nio.file.Path qlora = java.nio.file.Path.of("tests/data/launch/axolotl/gemma2-9b-qlora/qlora.yml");
    String imported = Memest.importLaunch(List.of(titan), new Memest.ImportOptions().gpu("a100-80gb").gpus(64));
    check(imported.contains("\"format\": \"torchtitan\""), "import format");
    String request = jsonSection(imported, "request");
    String parallel = jsonSection(request, "parallel"), training = jsonSection(request, "training");
    check(jsonNumber(parallel, "tp") == 1 && jsonNumber(parallel, "pp") == 1 && jsonNumber(parallel, "gpus") == 64,
        "import parallel " + parallel);
    check(jsonNumber(training, "micro_batch") == 1 && jsonNumber(training, "seq_len") == 8192, "import training " + training);
    check(training.contains("\"recompute\": \"op_selective\"") && training.contains("\"framework\": \"fsdp\""),
        "import recompute and framework " + training);
    String seqOrigin = jsonSection(jsonSection(imported, "origins"), "training.seq_len");
    check(seqOrigin.contains("\"from\": \"file\"") && jsonNumber(seqOrigin, "line") == 33
        && seqOrigin.contains("\"file\": \"" + titan + "\""), "origin of training.seq_len " + seqOrigin);
    check(!imported.contains("\"estimate\": {"), "no estimate unasked");
    // the request answers as it is; with estimate=true the import carries the same answer
    String direct = Memest.request(request);
    check(direct.contains("\"ok\": true") && jsonNumber(jsonSection(direct, "layout"), "tp") == 1, "request answers");
    String estimated = Memest.importLaunch(List.of(titan), new Memest.ImportOptions().gpu("a100-80gb").gpus(64)
        .seqLen(4096).set("{\"parallel\": {\"tp\": 2}}").estimate(true));
    check(jsonNumber(jsonSection(jsonSection(estimated, "estimate"), "layout"), "tp") == 2
        && jsonNumber(jsonSection(jsonSection(estimated, "request"), "training"), "seq_len") == 4096, "overrides and estimate");

    String adapter = jsonSection(jsonSection(Memest.importLaunch(List.of(qlora),
        new Memest.ImportOptions().gpu("l4-24gb").gpus(1)), "request"), "adapter");
    check(adapter.contains("\"type\": \"qlora\""), "axolotl adapter " + adapter);

    expectError(() -> Memest.importLaunch(List.of(titan), new Memest.ImportOptions().gpus(64)), "missing_field", "gpu");
    java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("memest-launch");
    java.nio.file.Path nul = dir.resolve("weights.toml"), blob = dir.resolve("model.bin");
    java.nio.file.Files.write(nul, new byte[] {'[', 'j', ']', 0, 0, 1});
    java.nio.file.Files.write(blob, new byte[] {(byte) 0xff, (byte) 0xfe, 0, 1, (byte) 0x80});
    MemestException binary = expectError(() -> Memest.importLaunch(List.of(nul),
        new Memest.ImportOptions().gpu("a100-80gb").gpus(8)), "parse_error", "files[0]");
    check(binary.getMessage().contains("binary"), "binary: " + binary.getMessage());
    expectError(() -> Memest.importLaunch(List.of(blob, titan), new Memest.ImportOptions().gpu("a100-80gb")),
        "parse_error", "files[0]");
    expectError(() -> Memest.importLaunch(List.of(titan, dir.resolve("missing.toml")),
        new Memest.ImportOptions().gpu("a100-80gb")), "invalid_argument", "files[1]");
    for (java.nio.file.Path f : List.of(nul, blob, dir)) java.nio.file.Files.delete(f);

    String tp2 = "{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
        + " \"parallel\": {\"gpus\": 8, \"tp\": 2}, \"training\": {\"seq_len\": 4096, \"global_batch\": 64}}";
    String emitted = Memest.emitLaunch(tp2, "megatron");
    String settings = jsonSection(emitted, "settings");
    int at = settings.indexOf("\"key\": \"--tensor-model-parallel-size\"");
    check(at >= 0 && jsonNumber(settings.substring(at), "value") == 2, "emit megatron " + settings);
    expectError(() -> Memest.emitLaunch(tp2, "fairseq"), "invalid_argument", "format");
  }
}

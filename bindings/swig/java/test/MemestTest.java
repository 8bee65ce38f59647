import java.util.List;
import org.memest.Memest;
import org.memest.MemestException;
import org.memest.swig.*;

/** A scheduler written in Java: builds requests, reads the peak per GPU and the verdict, and
 *  handles bad input as a MemestException naming the field. Run with java -ea. */
public class MemestTest {
  static int checks = 0;

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

    // model states: the ZeRO table's 7.5B on 64 GPUs with P_os = 31.4 GB
    Model bare = new Model();
    MemestNative.model_init(bare);
    bare.setNum_parameters(7.5e9);
    ModelStatesRequest ms = Memest.modelStatesRequest(bare);
    ms.setGpus(64); ms.setZero(1); ms.setParam_bytes(2); ms.setGrad_bytes(2);
    ModelStatesResult msr = Memest.modelStates(ms);
    check(Math.abs(msr.getEstimate_bytes() / 1e9 - 31.4) < 0.05, "ZeRO table 31.4 GB");
    check(Memest.verdictName(msr.getVerdict()).equals("unknown"), "no GPU: unknown");

    // fine-tuning: LLMem Algorithm 1 picks a method, agreeing with the JSON entry point
    FinetuneRequest ft = Memest.finetuneRequest("opt-1.3b", "v100-16gb");
    ft.setGpus(4);
    FinetuneChoice choice = Memest.finetuneSelect(ft);
    String selected = Memest.methodName(choice.getSelected());
    String auto = Memest.request("{\"mode\": \"finetune\", \"model\": \"opt-1.3b\", \"gpu\": \"v100-16gb\","
        + " \"parallel\": {\"gpus\": 4}, \"finetune\": {\"method\": \"auto\"}}");
    check(auto.contains("\"selected\": \"" + selected + "\""), "selected " + selected);
    check(jsonNumber(auto, "max_batch") == choice.getBatch(), "max batch");
    check(Memest.methodName(choice.option(0).getMethod()).equals("cdp"), "option 0 is cdp");
    ft.setMethod(memest_finetune_method.MEMEST_FINETUNE_ZERO3);
    ft.setBatch(8);
    FinetuneResult one = Memest.finetune(ft);
    check(one.getPeak_bytes() > 0 && one.getPer_gpu().getBase() > 0, "zero3 peak");
    ft.setMethod(memest_finetune_method.MEMEST_FINETUNE_AUTO);
    try { Memest.finetune(ft); check(false, "AUTO refused by finetune"); } catch (MemestException e) { checks++; }

    List<String> models = Memest.modelPresets();
    check(models.contains("llama-3.1-8b") && Memest.gpuPresets().contains("h100-80gb"), "presets");
    for (String id : models) {
      ParamCount c = new ParamCount();
      check(MemestNative.model_parameter_count(Memest.model(id), c) == 0 && c.getTotal() > 0, id);
    }
    System.out.println("java MemestTest: " + checks + " checks passed");
  }
}

package org.memest;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.memest.swig.*;

/**
 * libmemest for Java: per-GPU memory estimates for LLM training. A thin layer over the SWIG
 * classes of memest.i (org.memest.swig): builds requests with the library's defaults, calls
 * the C API and turns a failed status into a {@link MemestException} naming the field.
 *
 * <pre>
 *   PretrainRequest r = Memest.pretrainRequest("llama-3.1-8b", "a100-40gb");
 *   r.setGpus(8); r.setTp(4); r.setPp(2); r.setSeq_len(8192);
 *   Memest.Pretrain p = Memest.pretrain(r);
 *   System.out.println(p.result().getPeak_bytes() + " " + p.verdict());
 * </pre>
 */
public final class Memest {
  private Memest() {}

  static {
    String path = System.getProperty("memest.jni.library");
    if (path != null) System.load(path); else System.loadLibrary("memest_jni");
  }

  /** A pretraining estimate: the result and one entry per pipeline stage. */
  public record Pretrain(PretrainResult result, List<Stage> stages) {
    public String verdict() { return verdictName(result.getVerdict()); }
  }

  /** Throws when status is not MEMEST_OK; reads the thread's last error (same Java thread,
   *  hence the same OS thread, as the failing call). */
  static void check(int status) throws MemestException {
    if (status == memest_status.MEMEST_OK) return;
    throw new MemestException(status, MemestNative.status_name(status),
        MemestNative.last_error_field(), MemestNative.last_error());
  }

  public static String version() { return MemestNative.version_string(); }
  public static String verdictName(int verdict) { return MemestNative.verdict_name(verdict); }
  public static String methodName(int method) { return MemestNative.finetune_method_name(method); }

  /** Answers a JSON request (every mode) and returns the response JSON text. */
  public static String request(String requestJson) throws MemestException {
    int[] status = new int[1];
    String response = MemestNative.request_json(requestJson, status);
    check(status[0]);
    return response;
  }

  public static Model model(String presetId) throws MemestException {
    Model m = new Model();
    MemestNative.model_init(m);
    check(MemestNative.model_from_preset(presetId, m));
    return m;
  }

  public static Model modelFromConfig(String configJson) throws MemestException {
    Model m = new Model();
    MemestNative.model_init(m);
    check(MemestNative.model_from_config_json(configJson, m));
    check(MemestNative.model_validate(m));
    return m;
  }

  public static Gpu gpu(String presetId) throws MemestException {
    Gpu g = new Gpu();
    MemestNative.gpu_init(g);
    check(MemestNative.gpu_from_preset(presetId, g));
    return g;
  }

  public static List<String> modelPresets() {
    List<String> ids = new ArrayList<>();
    for (long i = 0; i < MemestNative.model_preset_count(); i++) ids.add(MemestNative.model_preset_id(i));
    return Collections.unmodifiableList(ids);
  }

  public static List<String> gpuPresets() {
    List<String> ids = new ArrayList<>();
    for (long i = 0; i < MemestNative.gpu_preset_count(); i++) ids.add(MemestNative.gpu_preset_id(i));
    return Collections.unmodifiableList(ids);
  }

  /** A pretraining request with the library's defaults for a model and a GPU preset. */
  public static PretrainRequest pretrainRequest(String model, String gpu) throws MemestException {
    PretrainRequest r = new PretrainRequest();
    MemestNative.pretrain_request_init(r);
    r.setModel(model(model));
    r.setGpu(gpu(gpu));
    return r;
  }

  public static Pretrain pretrain(PretrainRequest r) throws MemestException {
    long pp = r.getPp();
    int n = (int) Math.max(1, Math.min(pp, 1 << 17));
    StageArray stages = new StageArray(n);
    PretrainResult result = new PretrainResult();
    check(MemestNative.pretrain(r, result, stages.cast(), n));
    List<Stage> list = new ArrayList<>();
    for (int i = 0; i < result.getStage_count() && i < n; i++) {
      list.add(stages.getitem(i));  // a copy, owned by the Java object
    }
    return new Pretrain(result, Collections.unmodifiableList(list));
  }

  public static ModelStatesRequest modelStatesRequest(Model model) {
    ModelStatesRequest r = new ModelStatesRequest();
    MemestNative.model_states_request_init(r);
    r.setModel(model);
    return r;
  }

  public static ModelStatesResult modelStates(ModelStatesRequest r) throws MemestException {
    ModelStatesResult out = new ModelStatesResult();
    check(MemestNative.model_states(r, out));
    return out;
  }

  public static FinetuneRequest finetuneRequest(String model, String gpu) throws MemestException {
    FinetuneRequest r = new FinetuneRequest();
    MemestNative.finetune_request_init(r);
    r.setModel(model(model));
    r.setGpu(gpu(gpu));
    return r;
  }

  public static FinetuneResult finetune(FinetuneRequest r) throws MemestException {
    FinetuneResult out = new FinetuneResult();
    check(MemestNative.finetune(r, out));
    return out;
  }

  /** LLMem Algorithm 1: choice.getSelected(), choice.getBatch(), choice.option(0..3). */
  public static FinetuneChoice finetuneSelect(FinetuneRequest r) throws MemestException {
    FinetuneChoice out = new FinetuneChoice();
    check(MemestNative.finetune_select(r, out));
    return out;
  }
}

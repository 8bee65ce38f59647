package org.memest;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 *
 * Names (statuses, verdicts, recompute options, prune reasons, methods) and the verdict bands
 * come from the library's tables: {@link #enumNames}, {@link #verdictBands}.
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
    /** The training stack used ("megatron", "fsdp", ...: the library's name). */
    public String framework() {
      return MemestNative.enum_name(memest_enum.MEMEST_ENUM_FRAMEWORK, result.getFramework());
    }
    /** The loss used, "auto" resolved by the framework ("fused", "unfused", ...). */
    public String loss() { return MemestNative.enum_name(memest_enum.MEMEST_ENUM_LOSS, result.getLoss()); }
    /** The step's time by part (1.5; when global_batch is given, else zeros): seconds per
     *  iteration by the library's names (MEMEST_ENUM_STEP_PART), in its order; they add up to
     *  result().getStep_seconds(). */
    public Map<String, Double> stepParts() {
      return parts(new double[] {result.getCompute_seconds(), result.getRecompute_seconds(),
          result.getBubble_seconds(), result.getTp_comm_seconds(), result.getCp_comm_seconds(),
          result.getDp_comm_seconds(), result.getPp_comm_seconds(), result.getEp_comm_seconds(),
          result.getOptimizer_seconds(), result.getOffload_seconds()});
    }
  }

  /** A search entry's step time by part (1.5), as {@link Pretrain#stepParts}. */
  public static Map<String, Double> stepParts(SearchEntry e) {
    return parts(new double[] {e.getCompute_seconds(), e.getRecompute_seconds(), e.getBubble_seconds(),
        e.getTp_comm_seconds(), e.getCp_comm_seconds(), e.getDp_comm_seconds(), e.getPp_comm_seconds(),
        e.getEp_comm_seconds(), e.getOptimizer_seconds(), e.getOffload_seconds()});
  }

  /** The *_seconds fields in memest_step_part order, keyed by the library's names. */
  private static Map<String, Double> parts(double[] seconds) {
    int[] order = {memest_step_part.MEMEST_STEP_COMPUTE, memest_step_part.MEMEST_STEP_RECOMPUTE,
        memest_step_part.MEMEST_STEP_BUBBLE, memest_step_part.MEMEST_STEP_TP_COMM,
        memest_step_part.MEMEST_STEP_CP_COMM, memest_step_part.MEMEST_STEP_DP_COMM,
        memest_step_part.MEMEST_STEP_PP_COMM, memest_step_part.MEMEST_STEP_EP_COMM,
        memest_step_part.MEMEST_STEP_OPTIMIZER, memest_step_part.MEMEST_STEP_OFFLOAD};
    Map<String, Double> out = new LinkedHashMap<>();
    for (int i = 0; i < order.length; i++) {
      out.put(MemestNative.enum_name(memest_enum.MEMEST_ENUM_STEP_PART, order[i]), seconds[i]);
    }
    return Collections.unmodifiableMap(out);
  }

  /** PretrainRequest.setComm_overlap's value for overlap names (MEMEST_ENUM_OVERLAP: "dp",
   *  "tp", ...): bit (1 << value) per name; an unknown name throws a MemestException naming
   *  training.comm_overlap. No names: nothing overlapped (MEMEST_OVERLAP_STACK_DEFAULT, -1, is
   *  the training stack's own default). */
  public static int overlapBits(String... names) throws MemestException {
    int bits = 0;
    for (String name : names) {
      int v = enumValue(memest_enum.MEMEST_ENUM_OVERLAP, name);
      if (v < 0) {
        throw refuse(memest_status.MEMEST_ERR_INVALID_ARGUMENT, "training.comm_overlap",
            "training.comm_overlap: unknown name \"" + name + "\" (" + enumNames(memest_enum.MEMEST_ENUM_OVERLAP) + ")");
      }
      bits |= 1 << v;
    }
    return bits;
  }

  /** PretrainRequest.setRecompute_modules's value for Megatron-Core's recompute module names
   *  (1.11, MEMEST_ENUM_RECOMPUTE_MODULE: "core_attn", "moe_act", "layernorm", ...): bit
   *  (1 << value) per name; an unknown name throws a MemestException naming
   *  training.recompute_modules[i], as the JSON list is refused. No names: 0, Megatron's default
   *  (core_attn alone). */
  public static long recomputeModuleBits(String... names) throws MemestException {
    long bits = 0;
    for (int i = 0; i < names.length; i++) {
      int v = enumValue(memest_enum.MEMEST_ENUM_RECOMPUTE_MODULE, names[i]);
      if (v < 0) {
        String field = "training.recompute_modules[" + i + "]";
        throw refuse(memest_status.MEMEST_ERR_INVALID_ARGUMENT, field,
            field + ": unknown name \"" + names[i] + "\" (" + enumNames(memest_enum.MEMEST_ENUM_RECOMPUTE_MODULE) + ")");
      }
      bits |= 1L << v;
    }
    return bits;
  }

  /** LLMem's Algorithm 1: the choice and one option per method (CDP, ZeRO-3, TP, DP+TP). */
  public record FinetuneSelection(FinetuneChoice choice, List<FinetuneOption> options) {
    /** The method selected ("cdp", "zero3", "tp", "dp+tp" or "cpu_offload"). */
    public String selected() { return methodName(choice.getSelected()); }
  }

  /** A layout search: the totals, the ranked layouts (best first) and the prune counts by
   *  reason name, in the library's order. */
  public record Search(SearchResult result, List<SearchEntry> entries, Map<String, Long> pruned) {}

  /** Throws when status is not MEMEST_OK; reads the thread's last error (same Java thread,
   *  hence the same OS thread, as the failing call). */
  static void check(int status) throws MemestException {
    if (status == memest_status.MEMEST_OK) return;
    throw new MemestException(status, MemestNative.status_name(status),
        MemestNative.last_error_field(), MemestNative.last_error());
  }

  /** A refusal of this binding's own, for input it cannot hand to the C library. */
  private static MemestException refuse(int status, String field, String message) {
    return new MemestException(status, MemestNative.status_name(status), field, message);
  }

  public static String version() { return MemestNative.version_string(); }
  public static String verdictName(int verdict) { return MemestNative.verdict_name(verdict); }
  public static String methodName(int method) { return MemestNative.finetune_method_name(method); }

  /** The names of enumeration `which` (a memest_enum constant) by value, from the library's
   *  table: the names JSON requests and responses use. */
  public static List<String> enumNames(int which) {
    List<String> names = new ArrayList<>();
    long n = MemestNative.enum_count(which);
    for (int v = 0; v < n; v++) names.add(MemestNative.enum_name(which, v));
    return Collections.unmodifiableList(names);
  }

  /** The value named `name` in enumeration `which`, or -1. */
  public static int enumValue(int which, String name) {
    if (name.indexOf('\0') >= 0) return -1;
    return MemestNative.enum_value(which, name);
  }

  /** The upper bound of each bounded verdict band as a fraction of capacity, e.g.
   *  {fits=0.8, tight=1.0} (memest_verdict_limit); above the last, the verdict is "oom". */
  public static Map<String, Double> verdictBands() {
    Map<String, Double> bands = new LinkedHashMap<>();
    List<String> names = enumNames(memest_enum.MEMEST_ENUM_VERDICT);
    for (int v = 0; v < names.size(); v++) {
      double limit = MemestNative.verdict_limit(v);
      if (limit > 0) bands.put(names.get(v), limit);
    }
    return Collections.unmodifiableMap(bands);
  }

  /** Answers a JSON request (every mode) and returns the response JSON text. Text holding a
   *  NUL character is refused as a parse error (a C string would end there). */
  public static String request(String requestJson) throws MemestException {
    int nul = requestJson.indexOf('\0');
    if (nul >= 0) {
      int offset = requestJson.substring(0, nul).getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
      throw refuse(memest_status.MEMEST_ERR_PARSE, "",
          "request is not valid JSON: a NUL byte at offset " + offset + " (a C string ends there)");
    }
    int[] status = new int[1];
    String response = MemestNative.request_json(requestJson, status);
    check(status[0]);
    return response;
  }

  public static Model model(String presetId) throws MemestException {
    if (presetId.indexOf('\0') >= 0) {
      throw refuse(memest_status.MEMEST_ERR_UNKNOWN_PRESET, "model", "model: no preset with a NUL byte");
    }
    Model m = new Model();  // sized by its constructor
    check(MemestNative.model_from_preset(presetId, m));
    return m;
  }

  public static Model modelFromConfig(String configJson) throws MemestException {
    if (configJson.indexOf('\0') >= 0) {
      throw refuse(memest_status.MEMEST_ERR_PARSE, "", "config_json is not valid JSON: it holds a NUL byte");
    }
    Model m = new Model();
    check(MemestNative.model_from_config_json(configJson, m));
    check(MemestNative.model_validate(m));
    return m;
  }

  /** A bare parameter count, accepted by the model-states mode only. */
  public static Model bareModel(double numParameters) {
    Model m = new Model();
    m.setNum_parameters(numParameters);
    return m;
  }

  public static Gpu gpu(String presetId) throws MemestException {
    if (presetId.indexOf('\0') >= 0) {
      throw refuse(memest_status.MEMEST_ERR_UNKNOWN_PRESET, "gpu", "gpu: no preset with a NUL byte");
    }
    Gpu g = new Gpu();
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
    PretrainRequest r = new PretrainRequest();  // memest_pretrain_request_init's defaults
    r.setModel(model(model));
    r.setGpu(gpu(gpu));
    return r;
  }

  public static Pretrain pretrain(PretrainRequest r) throws MemestException {
    long pp = r.getPp();
    int n = (int) Math.max(1, Math.min(pp, 1 << 17));
    StageArray stages = new StageArray(n);
    PretrainResult result = new PretrainResult();
    check(MemestNative.pretrain(r, result, stages.cast(), MemestNative.swig_stage_size(), n));
    List<Stage> list = new ArrayList<>();
    for (int i = 0; i < result.getStage_count() && i < n; i++) {
      list.add(stages.getitem(i));  // a copy, owned by the Java object
    }
    return new Pretrain(result, Collections.unmodifiableList(list));
  }

  /** A model-states request with the library's defaults (no GPU: verdict "unknown"). */
  public static ModelStatesRequest modelStatesRequest(Model model) {
    ModelStatesRequest r = new ModelStatesRequest();
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
    r.setModel(model(model));
    r.setGpu(gpu(gpu));
    return r;
  }

  public static FinetuneResult finetune(FinetuneRequest r) throws MemestException {
    FinetuneResult out = new FinetuneResult();
    check(MemestNative.finetune(r, out));
    return out;
  }

  /** LLMem Algorithm 1: the method selected, its batch, and every method's row. */
  public static FinetuneSelection finetuneSelect(FinetuneRequest r) throws MemestException {
    final int capacity = 8;
    FinetuneChoice out = new FinetuneChoice();
    FinetuneOptionArray options = new FinetuneOptionArray(capacity);
    check(MemestNative.finetune_select(r, out, options.cast(), MemestNative.swig_finetune_option_size(), capacity));
    List<FinetuneOption> list = new ArrayList<>();
    for (int i = 0; i < out.getOption_count() && i < capacity; i++) list.add(options.getitem(i));
    return new FinetuneSelection(out, Collections.unmodifiableList(list));
  }

  /** A layout search over the GPUs of `base` (a pretrain request with the model, GPU, GPUs,
   *  sequence length and global batch), with the library's defaults for the space. */
  public static SearchRequest searchRequest(PretrainRequest base) {
    SearchRequest s = new SearchRequest();
    s.setBase(base);
    return s;
  }

  /** Ranks layouts by predicted throughput among those predicted to fit; the best `top`. */
  public static Search search(SearchRequest s, int top) throws MemestException {
    int capacity = Math.max(0, top);
    SearchEntryArray entries = new SearchEntryArray(Math.max(1, capacity));
    List<String> reasons = enumNames(memest_enum.MEMEST_ENUM_PRUNE_REASON);
    CountArray pruned = new CountArray(reasons.size());
    SearchResult result = new SearchResult();
    check(MemestNative.search(s, result, entries.cast(), MemestNative.swig_search_entry_size(), capacity,
        pruned.cast(), reasons.size()));
    List<SearchEntry> list = new ArrayList<>();
    for (int i = 0; i < result.getCount(); i++) list.add(entries.getitem(i));
    Map<String, Long> counts = new LinkedHashMap<>();
    for (int i = 0; i < reasons.size(); i++) counts.put(reasons.get(i), pruned.getitem(i).longValue());
    return new Search(result, Collections.unmodifiableList(list), Collections.unmodifiableMap(counts));
  }

  // ---- launch files: the library's modes "import" and "emit" ----------------------------

  /** What launch files do not say, given beside them (the JSON fields of an import request);
   *  fields left null (false) are not sent, so the library's behaviour applies. Setters chain:
   *  {@code new Memest.ImportOptions().gpu("a100-80gb").gpus(64)}. */
  public static final class ImportOptions {
    String gpu;        // a preset id, as a JSON string
    String gpuJson;    // a GPU object's JSON text
    Integer gpus;
    String model;      // a preset id or a Hugging Face id
    String modelJson;  // a config.json object's JSON text
    Integer seqLen;
    String format = "auto";
    String setJson;    // request fields to override, as a JSON object's text
    boolean estimate;
    String hfHome;

    /** A GPU preset id ("h100-80gb"); launch files never name the GPU. */
    public ImportOptions gpu(String presetId) { gpu = presetId; gpuJson = null; return this; }
    /** A GPU object as JSON text ({"memory_gib": 40, "gpus_per_node": 8}). */
    public ImportOptions gpuJson(String json) { gpuJson = json; gpu = null; return this; }
    public ImportOptions gpus(int n) { gpus = n; return this; }
    /** A model preset id or Hugging Face id, over what the files name. */
    public ImportOptions model(String id) { model = id; modelJson = null; return this; }
    /** A config.json's text as the model. */
    public ImportOptions modelJson(String json) { modelJson = json; model = null; return this; }
    public ImportOptions seqLen(int n) { seqLen = n; return this; }
    /** "auto" (default) or "torchtitan", "megatron", "deepspeed", "hf", "torchtune", "axolotl",
     *  "llama-factory", "accelerate". */
    public ImportOptions format(String f) { format = f; return this; }
    /** Request fields to override, as a nested JSON object's text: {"parallel": {"tp": 2}}. */
    public ImportOptions set(String json) { setJson = json; return this; }
    /** Estimate the request too (the response's "estimate"). */
    public ImportOptions estimate(boolean e) { estimate = e; return this; }
    /** The Hugging Face hub cache to look for config.json files in (default: HF_HUB_CACHE,
     *  HF_HOME/hub, ~/.cache/huggingface/hub). */
    public ImportOptions hfHome(String dir) { hfHome = dir; return this; }
  }

  /** A Java string as a JSON string literal. */
  static String jsonString(String s) {
    StringBuilder b = new StringBuilder(s.length() + 16).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  /** The JSON text of the import request {@link #importLaunch} sends: each file read (named
   *  by its path as given) into {"name", "text"}. A file that cannot be read throws a
   *  MemestException (invalid_argument), one that is not UTF-8 text a parse_error, both
   *  naming "files[i]" (the library names a file holding NUL bytes so). */
  public static String importDocument(List<Path> paths, ImportOptions o) throws MemestException {
    if (o == null) o = new ImportOptions();
    StringBuilder b = new StringBuilder("{\"mode\": \"import\", \"files\": [");
    for (int i = 0; i < paths.size(); i++) {
      String field = "files[" + i + "]";
      Path path = paths.get(i);
      String text;
      try {
        byte[] data = Files.readAllBytes(path);
        text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(data)).toString();
      } catch (CharacterCodingException e) {
        throw refuse(memest_status.MEMEST_ERR_PARSE, field,
            field + ": " + path + " is binary (not UTF-8 text), not a launch file");
      } catch (IOException | SecurityException e) {
        throw refuse(memest_status.MEMEST_ERR_INVALID_ARGUMENT, field,
            field + ": cannot read " + jsonString(path.toString()) + ": " + e);
      }
      if (i > 0) b.append(", ");
      b.append("{\"name\": ").append(jsonString(path.toString())).append(", \"text\": ")
          .append(jsonString(text)).append('}');
    }
    b.append("], \"format\": ").append(jsonString(o.format));
    if (o.gpu != null) b.append(", \"gpu\": ").append(jsonString(o.gpu));
    if (o.gpuJson != null) b.append(", \"gpu\": ").append(o.gpuJson);
    if (o.gpus != null) b.append(", \"gpus\": ").append(o.gpus);
    if (o.model != null) b.append(", \"model\": ").append(jsonString(o.model));
    if (o.modelJson != null) b.append(", \"model\": ").append(o.modelJson);
    if (o.seqLen != null) b.append(", \"seq_len\": ").append(o.seqLen);
    if (o.setJson != null) b.append(", \"set\": ").append(o.setJson);
    if (o.hfHome != null) b.append(", \"hf_home\": ").append(jsonString(o.hfHome));
    if (o.estimate) b.append(", \"estimate\": true");
    return b.append('}').toString();
  }

  /** Reads one run's launch files (a torchtitan TOML, a Megatron launch script, a DeepSpeed
   *  JSON with its launcher, a torchtune / axolotl / LLaMA-Factory / accelerate YAML) into the
   *  pretrain request they describe, and returns the response JSON text: "format", "files",
   *  "request" (a complete pretrain request), "origins" (where each value came from: file and
   *  line, framework default, flag, derived), "warnings" and, when asked, "estimate". Throws a
   *  MemestException naming the field: "gpu" when none is given, "files[i]" for a file that
   *  cannot be read or is binary, the request's fields (with their origin) otherwise. */
  public static String importLaunch(List<Path> paths, ImportOptions o) throws MemestException {
    return request(importDocument(paths, o));
  }

  /** The layout of a pretrain request (its JSON text, e.g. an import's "request") in a
   *  training stack's own terms: format "megatron", "torchtitan", "deepspeed" or "accelerate".
   *  Returns the response JSON text: "format", "settings" ([{"key", "value", "section"?}]) and
   *  "text" (what to paste into the launch file). */
  public static String emitLaunch(String requestJson, String format) throws MemestException {
    return request("{\"mode\": \"emit\", \"format\": " + jsonString(format) + ", \"request\": "
        + requestJson + "}");
  }
}

// The `memest` executable against the same references as the library: 4D paper Table 2
// through `memest pretrain` and `memest request`, the invalid-request list (exit code 2,
// the field named, nothing partial on stdout), and flag-level errors.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::json;

struct Run {
  int rc;
  std::string out;
  std::string err;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_path(const char* name) {
  return std::string("/tmp/memest_cli_test_") + std::to_string(::getpid()) + "_" + name;
}

// Runs `memest ARGS` (ARGS already shell-quoted), optionally with `stdin_text` on stdin.
Run run(const std::string& args, const std::string* stdin_text = nullptr) {
  const std::string err_path = temp_path("stderr");
  std::string cmd = std::string("'") + MEMEST_CLI + "' " + args + " 2>'" + err_path + "'";
  if (stdin_text) {
    const std::string in_path = temp_path("stdin");
    std::ofstream(in_path) << *stdin_text;
    cmd += " <'" + in_path + "'";
  }
  FILE* pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, read_file(err_path)};
}

json load(const char* name) { return json::parse(read_file(std::string(MEMEST_TEST_DATA) + "/" + name)); }

}  // namespace

TEST_CASE("4D paper Table 2 through `memest pretrain` and `memest request`: 147 cells") {
  const json ref = load("llama31-8b-a100-table2-3.json");
  int cells = 0;
  for (const auto& row : ref["rows"]) {
    CAPTURE(row.dump());
    const double paper = row["paper_estimate_gib"];
    std::ostringstream args;
    args << "pretrain --model llama-3.1-8b --gpu a100-40gb --gpus " << row["gpus"] << " --tp "
         << row["tp"] << " --cp " << row["cp"] << " --pp " << row["pp"] << " --mbs " << row["mbs"]
         << " --seq 8192 --global-batch 1024 --format json";
    const Run cli = run(args.str());
    REQUIRE(cli.rc == 0);
    CHECK(std::fabs(json::parse(cli.out)["estimate_gib"].get<double>() - paper) <= 0.005);

    const std::string request =
        json{{"mode", "pretrain"},
             {"model", "llama-3.1-8b"},
             {"gpu", "a100-40gb"},
             {"parallel", {{"gpus", row["gpus"]}, {"tp", row["tp"]}, {"cp", row["cp"]}, {"pp", row["pp"]}}},
             {"training", {{"seq_len", 8192}, {"micro_batch", row["mbs"]}, {"global_batch", 1024}}}}
            .dump();
    const Run req = run("request", &request);
    REQUIRE(req.rc == 0);
    const json body = json::parse(req.out);
    CHECK(std::fabs(body["estimate_gib"].get<double>() - paper) <= 0.005);
    // The CLI's flags and the JSON request are one computation: identical bytes.
    CHECK(body["estimate_bytes"] == json::parse(cli.out)["estimate_bytes"]);
    ++cells;
  }
  CHECK(cells == 147);
}

TEST_CASE("Invalid requests through `memest request`: exit 2, the error document, the field") {
  const json data = load("invalid_requests.json");
  for (const auto& c : data["cases"]) {
    CAPTURE(c["name"].get<std::string>());
    const std::string text =
        c["request"].is_string() ? c["request"].get<std::string>() : c["request"].dump();
    const Run r = run("request", &text);
    CHECK(r.rc == 2);
    const json body = json::parse(r.out);
    CHECK(body["ok"] == false);
    CHECK(body.size() == 2);
    CHECK(body["error"]["code"] == c["code"]);
    CHECK(body["error"]["field"] == c["field"]);
    // One line on stderr, naming the field.
    CHECK(r.err.rfind("memest: error: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(c["field"].get<std::string>()) != std::string::npos);
  }
}

TEST_CASE("Flag-level errors: exit 2, a message on stderr, nothing on stdout") {
  const char* cases[][2] = {
      {"pretrain --tp 3 --gpus 12 --pp 1", "parallel.tp=3 does not divide num_attention_heads=32"},
      {"pretrain --gpus 12 --tp 4 --pp 2", "parallel.gpus=12 is not divisible by tp*cp*pp=8"},
      {"pretrain --model llama-9", "unknown model preset \"llama-9\""},
      {"pretrain --gpu tpu-v5", "unknown GPU preset \"tpu-v5\""},
      {"pretrain --seq 0", "training.seq_len"},
      {"pretrain --mbs -2", "training.micro_batch"},
      {"pretrain --tp x", "--tp"},
      {"pretrain --recompute sometimes", "--recompute"},
      {"pretrain --format xml", "--format"},
      {"pretrain --config /nonexistent/config.json", "--config"},
      {"pretrain --model llama-3.1-8b --config /etc/hostname", "--config"},
      {"pretrain --pp 64 --gpus 64 --tp 1", "parallel.pp=64 is larger than num_hidden_layers=32"},
      {"model-states --zero 5", "--zero"},
      {"model-states --params -3", "--params"},
      {"model-states --params 1e30", "model.num_parameters"},
      {"finetune --method dp+tp --tp 3", "finetune.tp=3 does not divide parallel.gpus=4"},
      {"finetune --batch 0 --method cdp", "finetune.batch"},
      {"finetune --model opt-1.3b --seq 4096", "max_position_embeddings=2048"},
      {"finetune --method fsdp", "--method"},
      {"frobnicate", "frobnicate"},
      {"", "subcommand"},
  };
  for (const auto& c : cases) {
    CAPTURE(c[0]);
    const Run r = run(c[0]);
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(c[1]) != std::string::npos);
  }
}

TEST_CASE("--config reads a real Hugging Face config.json") {
  const std::string path = temp_path("config.json");
  std::ofstream(path) << R"({"architectures": ["MistralForCausalLM"], "model_type": "mistral",
    "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
    "max_position_embeddings": 32768, "sliding_window": 4096, "rope_theta": 10000.0,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";
  const Run from_file = run("pretrain --config '" + path + "' --format json");
  const Run preset = run("pretrain --model mistral-7b --format json");
  REQUIRE(from_file.rc == 0);
  REQUIRE(preset.rc == 0);
  const json a = json::parse(from_file.out);
  const json b = json::parse(preset.out);
  CHECK(a["model"]["num_parameters"].get<double>() == 7241732096.0);
  CHECK(a["estimate_bytes"] == b["estimate_bytes"]);
}

TEST_CASE("--config takes Python's bare Infinity where the library does not need the value") {
  // A hybrid Nemotron-H config (blocks "M-*-") with time_step_limit [0.0, Infinity], as
  // Nemotron-H's released config.json writes it: 88472 parameters, derived by hand in
  // tests/unit/test_hybrid.cpp.
  const std::string path = temp_path("nemotron_h.json");
  std::ofstream(path) << R"({"model_type": "nemotron_h", "hidden_size": 64, "num_hidden_layers": 4,
    "hybrid_override_pattern": "M-*-", "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 16, "intermediate_size": 128, "vocab_size": 100, "mamba_num_heads": 8,
    "mamba_head_dim": 16, "ssm_state_size": 16, "n_groups": 2, "conv_kernel": 4,
    "use_bias": false, "use_conv_bias": true, "mlp_bias": false, "attention_bias": false,
    "tie_word_embeddings": false, "time_step_limit": [0.0, Infinity], "rescale": NaN})";
  const Run r = run("model-states --config '" + path + "' --format json");
  REQUIRE(r.rc == 0);
  const json a = json::parse(r.out);
  CHECK(a["model"]["num_parameters"].get<double>() == 88472.0);
  CHECK(a["model"]["mixer_pattern"] == "M-A-");
  // a value the library needs, non-finite: its error, naming the field, exit 2, no output
  const std::string bad = temp_path("bad_infinity.json");
  std::ofstream(bad) << R"({"model_type": "llama", "hidden_size": Infinity, "intermediate_size": 256,
    "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100})";
  const Run e = run("model-states --config '" + bad + "'");
  CHECK(e.rc == 2);
  CHECK(e.out.empty());
  CHECK(e.err.find("model.hidden_size") != std::string::npos);
  CHECK(e.err.find("not finite") != std::string::npos);
}

TEST_CASE("--help on every subcommand, --version, exit 0") {
  for (const char* cmd : {"--help", "pretrain --help", "finetune --help", "model-states --help", "search --help",
                          "request --help", "models --help", "gpus --help"}) {
    CAPTURE(cmd);
    const Run r = run(cmd);
    CHECK(r.rc == 0);
    CHECK(r.out.find("Usage") != std::string::npos);
  }
  const Run v = run("--version");
  CHECK(v.rc == 0);
  CHECK(v.out.find("memest 1.17.3") != std::string::npos);
}

TEST_CASE("CSV and JSON carry the same numbers") {
  const Run j = run("pretrain --format json");
  const Run c = run("pretrain --format csv");
  REQUIRE(j.rc == 0);
  REQUIRE(c.rc == 0);
  const json body = json::parse(j.out);
  std::istringstream lines(c.out);
  std::string header, first;
  std::getline(lines, header);
  std::getline(lines, first);
  CHECK(header.rfind("stage,layers,", 0) == 0);
  // Column 9 is total_bytes of stage 0.
  std::istringstream cells(first);
  std::string cell;
  for (int i = 0; i < 9; ++i) std::getline(cells, cell, ',');
  CHECK(std::stod(cell) == body["stages"][0]["total_bytes"].get<double>());
}

TEST_CASE("Every floating flag refuses inf, -inf, nan and 1e999: exit 2, one line naming the flag") {
  const char* flags[][2] = {
      {"pretrain", "--memory-gib"}, {"search", "--memory-gib"},  {"finetune", "--memory-gib"},
      {"model-states", "--memory-gib"}, {"model-states", "--params"}, {"finetune", "--base-mib"},
      {"finetune", "--page-mib"},   {"finetune", "--chunk-bytes"},
  };
  for (const auto& f : flags) {
    for (const char* value : {"inf", "-inf", "nan", "1e999", "INFINITY"}) {
      const std::string args = std::string(f[0]) + " " + f[1] + " " + value;
      CAPTURE(args);
      const Run r = run(args);
      CHECK(r.rc == 2);
      CHECK(r.out.empty());
      CHECK(r.err == std::string("memest: error: ") + f[1] + ": must be a finite number, got " + value + "\n");
    }
  }
}

TEST_CASE("Integer flags refuse fractions, garbage and values out of range: exit 2, the flag named") {
  const char* cases[][2] = {
      {"pretrain --tp 2.5", "--tp: must be an integer, got 2.5"},
      {"pretrain --gpus 8x", "--gpus: must be an integer, got 8x"},
      {"pretrain --seq 1e4", "--seq: must be an integer, got 1e4"},
      {"pretrain --global-batch 99999999999999999999", "--global-batch: must be an integer from"},
      {"pretrain --gpus-per-node 0", "--gpus-per-node: must be a positive integer, got 0"},
      {"pretrain --gpus-per-node 4294967296", "--gpus-per-node: must be an integer from 1 to 2147483647"},
      {"search --max-vpp nan", "--max-vpp: must be an integer, got nan"},
      {"search --zero 1 x", "--zero: must be an integer, got x"},
      {"search --top 0", "--top"},
      {"finetune --batch 1.5", "--batch: must be an integer, got 1.5"},
      {"model-states --zero 7", "--zero"},
  };
  for (const auto& c : cases) {
    CAPTURE(c[0]);
    const Run r = run(c[0]);
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind(std::string("memest: error: ") + c[1], 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("--gpu-profile: the file's object is the request's gpu, the same as in `memest request`") {
  const std::string profile = std::string(MEMEST_TEST_DATA) + "/../cli/data/gpu_profile.json";
  const Run cli = run("pretrain --gpu-profile '" + profile + "' --gpus 16 --format json");
  REQUIRE(cli.rc == 0);
  const std::string request =
      json{{"mode", "pretrain"},
           {"model", "llama-3.1-8b"},
           {"gpu", json::parse(read_file(profile))},
           {"parallel", {{"gpus", 16}, {"tp", 4}, {"cp", 1}, {"pp", 2}}},
           {"training", {{"seq_len", 8192}, {"micro_batch", 1}, {"global_batch", 1024}}}}
          .dump();
  const Run req = run("request", &request);
  REQUIRE(req.rc == 0);
  CHECK(json::parse(cli.out) == json::parse(req.out));
  for (const char* other : {"--gpu a100-80gb", "--memory-gib 40", "--gpus-per-node 4"}) {
    CAPTURE(other);
    const Run both = run("search --gpu-profile '" + profile + "' " + other);
    CHECK(both.rc == 2);
    CHECK(both.out.empty());
    CHECK(both.err.find("--gpu-profile cannot be used together") != std::string::npos);
  }
}

TEST_CASE("every pretraining request field the library lists with a flag is a `memest pretrain` flag") {
  // {"mode": "fields"}: the library's field registry (libmemest/src/json/request_fields.cpp)
  const std::string request = R"({"mode": "fields"})";
  const Run fields = run("request", &request);
  REQUIRE(fields.rc == 0);
  const json listed = json::parse(fields.out);
  const Run help = run("pretrain --help");
  REQUIRE(help.rc == 0);
  int flags = 0;
  for (const json& f : listed.at("fields")) {
    if (!f.contains("cli")) continue;
    const std::string flag = f.at("cli").get<std::string>();
    CAPTURE(f.at("path").get<std::string>());
    CAPTURE(flag);
    bool found = false;  // the whole flag: followed by a space, a comma, '=' or the line's end
    for (std::size_t at = help.out.find(flag); at != std::string::npos && !found;
         at = help.out.find(flag, at + 1)) {
      const std::size_t end = at + flag.size();
      found = end == help.out.size() || std::string(" ,=\n").find(help.out[end]) != std::string::npos;
    }
    CHECK(found);
    ++flags;
  }
  CHECK(flags >= 45);
}

TEST_CASE("search --help states the global-batch default, and the table fits 100 columns unless --wide") {
  const Run help = run("search --help");
  REQUIRE(help.rc == 0);
  CHECK(help.out.find("default 1024") != std::string::npos);
  auto widest = [](const std::string& text) {
    std::size_t most = 0;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) most = std::max(most, line.size());
    return most;
  };
  const Run narrow = run("search --gpus 64 --top 10 --include-oom");
  const Run wide = run("search --gpus 64 --top 10 --include-oom --wide");
  REQUIRE(narrow.rc == 0);
  REQUIRE(wide.rc == 0);
  CHECK(widest(narrow.out) <= 100);
  CHECK(widest(wide.out) > 100);
}

TEST_CASE("--compile-components names the parts — --compile is all — a contradiction is refused") {
  // Llama-3.1-8B (the default model) on one GPU under plain PyTorch, s = 2048, b = 1: the
  // unfused loss on 2048 x 128256 bf16 logits keeps 12 B/logit eager and 4 compiled
  // (loss_memory): 262668288 logits * 12 = 3152019456 and * 4 = 1050673152 bytes.
  const std::string base = "pretrain --framework pytorch --gpus 1 --tp 1 --pp 1 --seq 2048 "
                           "--format json ";
  const Run model = run(base + "--compile-components model");
  REQUIRE(model.rc == 0);
  const json m = json::parse(model.out);
  CHECK(m["training"]["compile"] == true);
  CHECK(m["training"]["compile_components"] == "model");
  CHECK(m["stages"][0]["stack"]["loss_bytes"].get<double>() == 3152019456.0);
  const Run all = run(base + "--compile");
  REQUIRE(all.rc == 0);
  const json a = json::parse(all.out);
  CHECK(a["training"]["compile_components"] == "all");
  CHECK(a["stages"][0]["stack"]["loss_bytes"].get<double>() == 1050673152.0);
  CHECK(run(base + "--compile --compile-components all").out == all.out);
  const Run both = run(base + "--compile --compile-components model");
  CHECK(both.rc != 0);
  CHECK(both.out.empty());
  CHECK(both.err.find("--compile means --compile-components all") != std::string::npos);
  const Run bad = run(base + "--compile-components blocks");
  CHECK(bad.rc != 0);
  CHECK(bad.err.find("--compile-components") != std::string::npos);
}

TEST_CASE("--first-stage-layers, --last-stage-layers and --pipeline-layout reach the library (1.7)") {
  // Llama-3.1-8B's 32 layers over pp 4: first 6 and last 6 leave 10 + 10 between; the layout
  // string's 8 virtual stages (vpp 2) hold 3+3, 5+5, 5+5, 3+3 layers.
  const std::string base = "pretrain --model llama-3.1-8b --gpus 4 --tp 1 --pp 4 --format json ";
  const Run ends = run(base + "--first-stage-layers 6 --last-stage-layers 6");
  REQUIRE(ends.rc == 0);
  const json e = json::parse(ends.out);
  CHECK(e["layout"]["first_stage_layers"] == 6);
  CHECK(e["layout"]["last_stage_layers"] == 6);
  REQUIRE(e["stages"].size() == 4);
  CHECK(e["stages"][0]["layers"] == 6);
  CHECK(e["stages"][1]["layers"] == 10);
  CHECK(e["stages"][2]["layers"] == 10);
  CHECK(e["stages"][3]["layers"] == 6);
  // The first stage alone: the other three split the rest (32 - 5 = 27 -> 9 each).
  const Run first = run(base + "--first-stage-layers 5");
  REQUIRE(first.rc == 0);
  const json f = json::parse(first.out);
  CHECK(f["stages"][0]["layers"] == 5);
  CHECK(f["stages"][1]["layers"] == 9);
  CHECK(f["stages"][3]["layers"] == 9);
  const Run layout = run(base + "--vpp 2 --pipeline-layout 'Et*3|t*5|t*5|t*3|t*3|t*5|t*5|t*3L'");
  REQUIRE(layout.rc == 0);
  const json l = json::parse(layout.out);
  CHECK(l["layout"]["pipeline_layout"] == "Et*3|t*5|t*5|t*3|t*3|t*5|t*5|t*3L");
  REQUIRE(l["stages"].size() == 4);
  CHECK(l["stages"][0]["layers"] == 6);
  CHECK(l["stages"][1]["layers"] == 10);
  CHECK(l["stages"][2]["layers"] == 10);
  CHECK(l["stages"][3]["layers"] == 6);
  // A layout of 16 layers for a 32-layer model: exit 2, the field named, nothing on stdout.
  const Run bad = run(base + "--vpp 2 --pipeline-layout 'Et*3|t*5|t*5|t*3L'");
  CHECK(bad.rc == 2);
  CHECK(bad.out.empty());
  CHECK(bad.err.find("parallel.pipeline_layout") != std::string::npos);
  // The router is a LoRA target by the library's own name table. Qwen3-30B-A3B (hidden 2048,
  // 32 heads x 128, 128 experts, 48 layers), r = 8: q_proj 8 * (2048 + 4096) = 49152 and the
  // router 8 * (2048 + 128) = 17408 a layer, x 48 = 3194880.
  const Run router = run("pretrain --model qwen3-30b-a3b --framework fsdp --adapter lora --tp 1 "
                         "--pp 1 --gpus 8 --lora-targets q_proj,router --format json");
  REQUIRE(router.rc == 0);
  CHECK(json::parse(router.out)["adapter"]["trainable_parameters"].get<double>() == 3194880.0);
  // torchtitan's expert parallelism under fsdp: ep 2 of 8 GPUs leaves edp 4.
  const Run ep = run("pretrain --model qwen3-30b-a3b --framework fsdp --tp 1 --pp 1 --gpus 8 "
                     "--ep 2 --format json");
  REQUIRE(ep.rc == 0);
  CHECK(json::parse(ep.out)["layout"]["ep"] == 2);
  CHECK(json::parse(ep.out)["layout"]["edp"] == 4);
}

TEST_CASE("--ddp on wraps one GPU in DDP — a bucket size alone does not — --ddp off on 2 GPUs is refused (1.7)") {
  // Llama-3.1-8B under plain PyTorch with fp32 gradients on one GPU: no DDP, no buckets, also
  // with --bucket-cap-mb 25 (DDP's documented default); --ddp on (torchrun with DDP around one
  // GPU) buckets every gradient: 4 bytes x num_parameters.
  const std::string base = "pretrain --model llama-3.1-8b --framework pytorch --gpus 1 --tp 1 "
                           "--pp 1 --param-dtype fp32 --grad-dtype fp32 --format json ";
  const Run plain = run(base);
  REQUIRE(plain.rc == 0);
  const json p = json::parse(plain.out);
  CHECK(p["training"]["ddp"] == "default");
  CHECK(p["stages"][0]["stack"]["framework_buffer_bytes"].get<double>() == 0.0);
  const Run cap = run(base + "--bucket-cap-mb 25");
  REQUIRE(cap.rc == 0);
  const json c = json::parse(cap.out);
  CHECK(c["training"]["ddp"] == "default");
  CHECK(c["stages"][0]["stack"]["framework_buffer_bytes"].get<double>() == 0.0);
  CHECK(c["stages"][0]["gradients_bytes"] == p["stages"][0]["gradients_bytes"]);
  const Run on = run(base + "--bucket-cap-mb 25 --ddp on");
  REQUIRE(on.rc == 0);
  const json o = json::parse(on.out);
  CHECK(o["training"]["ddp"] == true);
  const double n = o["model"]["num_parameters"].get<double>();
  CHECK(n > 8e9);
  CHECK(o["stages"][0]["stack"]["framework_buffer_bytes"].get<double>() == 4 * n);
  CHECK(o["peak_bytes"].get<double>() > p["peak_bytes"].get<double>());
  // --ddp off on one GPU is the default's answer, said as such
  const Run off = run(base + "--ddp off");
  REQUIRE(off.rc == 0);
  const json f = json::parse(off.out);
  CHECK(f["training"]["ddp"] == false);
  CHECK(f["peak_bytes"] == p["peak_bytes"]);
  // two data-parallel ranks run under DDP: --ddp off is refused, exit 2, the field named
  const Run two = run("pretrain --model llama-3.1-8b --framework pytorch --gpus 2 --tp 1 --pp 1 "
                      "--ddp off --format json");
  CHECK(two.rc == 2);
  CHECK(two.out.empty());
  CHECK(two.err.find("training.ddp") != std::string::npos);
  // under megatron DDP's buckets are not modelled: refused by name
  const Run meg = run("pretrain --model llama-3.1-8b --gpus 1 --tp 1 --pp 1 --ddp on --format json");
  CHECK(meg.rc == 2);
  CHECK(meg.err.find("training.ddp") != std::string::npos);
}

TEST_CASE("finetune: the table names the GPU count asked for, also when LLMem selects CPU offloading") {
  // Llama-3.1-8B does not fit one RTX 4090 at batch 1: Algorithm 1 selects CPU offloading, and
  // that answer has no layout; the heading still says the count the command asked for
  for (const char* gpus : {"1", "3"}) {
    const Run r = run(std::string("finetune -m llama-3.1-8b -g rtx4090-24gb -n ") + gpus);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("selected: cpu_offload") != std::string::npos);
    CHECK(r.out.find(std::string("fine-tuning (LLMem) on ") + gpus + " x NVIDIA GeForce RTX 4090") !=
          std::string::npos);
    CHECK(r.out.find(" on 0 x ") == std::string::npos);
  }
  // a method that fits: the layout's count, as before
  const Run fit = run("finetune -m opt-1.3b -g a100-80gb -n 2");
  REQUIRE(fit.rc == 0);
  CHECK(fit.out.find("fine-tuning (LLMem) on 2 x NVIDIA A100 SXM 80GB") != std::string::npos);
}

TEST_CASE("pretrain: the default layout (tp 4, pp 2) falls back to tp = cp = pp = 1 where it does not divide --gpus or the expert fold, set values stay") {
  const auto layout = [](const std::string& args) {
    const Run r = run("pretrain " + args + " --format json");
    INFO(args << ": " << r.err);
    REQUIRE(r.rc == 0);
    const json l = json::parse(r.out)["layout"];
    return std::vector<int64_t>{l["gpus"].get<int64_t>(), l["tp"].get<int64_t>(), l["cp"].get<int64_t>(),
                                l["pp"].get<int64_t>()};
  };
  // the README's default example, and counts the default layout divides: unchanged
  CHECK(layout("") == std::vector<int64_t>{8, 4, 1, 2});
  CHECK(layout("--gpus 16") == std::vector<int64_t>{16, 4, 1, 2});
  // one GPU (and two, and six): what fits them, not "gpus=1 is not divisible by tp*cp*pp=8"
  CHECK(layout("--gpus 1") == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(layout("--gpus 2") == std::vector<int64_t>{2, 1, 1, 1});
  CHECK(layout("--gpus 6 --global-batch 768") == std::vector<int64_t>{6, 1, 1, 1});
  // a value set on the command line is kept; only the unset ones fall back
  CHECK(layout("--gpus 4 --tp 4") == std::vector<int64_t>{4, 4, 1, 1});
  CHECK(layout("--gpus 2 --pp 2") == std::vector<int64_t>{2, 1, 1, 2});
  // the expert layers fold the same GPUs into etp x ep x pp (etp unset is tp): Mixtral with
  // --ep 8 on 8 GPUs is tp = pp = 1 (was "not divisible by etp*ep*pp=64"); --ep 2 on 16 GPUs
  // keeps the default (4 x 2 x 2 divides 16)
  CHECK(layout("--model mixtral-8x7b --ep 8") == std::vector<int64_t>{8, 1, 1, 1});
  CHECK(layout("--model mixtral-8x7b --gpus 16 --ep 2") == std::vector<int64_t>{16, 4, 1, 2});
  // set explicitly, the layout is the user's: the library refuses it, naming the count
  const Run set = run("pretrain --gpus 1 --tp 4 --pp 2 --format json");
  CHECK(set.rc == 2);
  CHECK(set.out.empty());
  CHECK(set.err.find("parallel.gpus=1 is not divisible by tp*cp*pp=8") != std::string::npos);
}

namespace {

// The words of a command line as the CLI prints flags: plain words, and single-quoted parts
// ('...', with '\'' for a quote) as a POSIX shell reads them.
std::vector<std::string> shell_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const std::size_t close = text.find('\'', i + 1);
      REQUIRE(close != std::string::npos);
      word += text.substr(i + 1, close - i - 1);
      i = close;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

// The words as one shell command line, each single-quoted.
std::string shell_line(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    out += (out.empty() ? "'" : " '");
    for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += "'";
  }
  return out;
}

// For `memest ARGS` (a pretrain run that does not fit): each suggestion of its JSON answer, as
// its table line prints it, `    CHANGE  peak X GiB[, host Y GiB]  (FLAGS)`, FLAGS appended to
// ARGS (a "without --flag" part leaves that flag out) gives, through the CLI again, exactly the
// suggestion's peak_bytes. Returns the suggestions' change names.
std::vector<std::string> check_suggestion_flags(const std::string& args_text) {
  const std::vector<std::string> args = shell_words(args_text);
  const Run js = run(shell_line(args) + " --format json");
  INFO(args_text << ": " << js.err);
  REQUIRE(js.rc == 0);
  const json body = json::parse(js.out);
  REQUIRE(body.contains("suggestions"));
  const json& suggestions = body["suggestions"];
  REQUIRE(!suggestions.empty());
  const Run table = run(shell_line(args));
  REQUIRE(table.rc == 0);
  const std::string head = "  would fit:\n";
  const std::size_t at = table.out.find(head);
  REQUIRE(at != std::string::npos);
  std::istringstream lines(table.out.substr(at + head.size()));
  std::vector<std::string> changes;
  for (const json& s : suggestions) {
    std::string line;
    REQUIRE(std::getline(lines, line));
    CAPTURE(line);
    const std::string change = s["change"].get<std::string>();
    changes.push_back(change);
    CHECK(line.rfind("    " + change + " ", 0) == 0);
    // host memory stays shown beside the peak
    CHECK((line.find(", host ") != std::string::npos) == s.contains("host_bytes"));
    const std::size_t open = line.find("  (", line.find(" peak "));
    REQUIRE(open != std::string::npos);
    REQUIRE(line.back() == ')');
    const std::string flags = line.substr(open + 3, line.size() - open - 4);
    CHECK(flags.find("no flag") == std::string::npos);  // every field a suggestion sets has one
    std::vector<std::string> applied = args;
    std::size_t start = 0;
    while (start <= flags.size()) {
      const std::size_t semi = std::min(flags.find("; ", start), flags.size());
      const std::string part = flags.substr(start, semi - start);
      start = semi + 2;
      if (part.rfind("without ", 0) == 0) {
        const std::string flag = part.substr(8);
        const auto it = std::find(applied.begin(), applied.end(), flag);
        CHECK(it != applied.end());  // said to leave out what the command line gave
        if (it != applied.end()) applied.erase(it);
        continue;
      }
      for (const std::string& w : shell_words(part)) applied.push_back(w);
    }
    const Run again = run(shell_line(applied) + " --format json");
    INFO(shell_line(applied) << ": " << again.err);
    REQUIRE(again.rc == 0);
    const json got = json::parse(again.out);
    CHECK(got["peak_bytes"] == s["peak_bytes"]);
    CHECK(got["peak_verdict"] == s["peak_verdict"]);
  }
  return changes;
}

bool any_change(const std::vector<std::string>& changes, const std::string& part) {
  return std::any_of(changes.begin(), changes.end(),
                     [&](const std::string& c) { return c.find(part) != std::string::npos; });
}

}  // namespace

TEST_CASE("A suggestion's flags appended to the command line give its peak: QLoRA 70B on RTX 4090s") {
  std::vector<std::string> all;
  for (const char* args : {
           // 2 x RTX 4090, FSDP: offload parameters with recompute, or with bf16 adapters
           "pretrain -m llama-3.1-70b -g rtx4090-24gb --gpus 2 --tp 1 --pp 1 --seq 512 "
           "--global-batch 8 --framework fsdp --zero 3 --adapter qlora --lora-targets all-linear "
           "--recompute none",
           // 4 x RTX 4090, DeepSpeed ZeRO-3: recompute with offloading, micro-batch 1, double
           // quantisation; the search's layout
           "pretrain -m llama-3.1-70b -g rtx4090-24gb --gpus 4 --tp 1 --pp 1 --seq 512 --mbs 2 "
           "--global-batch 8 --framework deepspeed --zero 3 --adapter qlora --lora-targets "
           "all-linear --recompute none",
           // tight: offloading, double quantisation alone, and more GPUs with the default layout
           // (no --tp, --pp: tp 4, pp 2 would divide 8 GPUs; the suggestion keeps tp = pp = 1).
           // reduce_bucket_size 2e8: at DeepSpeed's 5e8 the ipg buffer of the fp32 adapters
           // (allocated whole, 1.86 GiB) is more than double quantisation saves.
           "pretrain -m llama-3.1-70b -g rtx4090-24gb --gpus 4 --seq 1024 --global-batch 8 "
           "--framework deepspeed --zero 3 --adapter qlora --lora-targets all-linear --recompute full "
           "--reduce-bucket-size 200000000"}) {
    CAPTURE(args);
    for (const std::string& c : check_suggestion_flags(args)) all.push_back(c);
  }
  CHECK(any_change(all, "offload parameters"));
  CHECK(any_change(all, "bf16 adapters"));
  CHECK(any_change(all, "double quantisation"));
  CHECK(any_change(all, "recompute full"));
  CHECK(any_change(all, "8 GPUs"));
}

TEST_CASE("A suggestion's flags appended to the command line give its peak: dense pretraining") {
  std::vector<std::string> all;
  for (const char* args : {
           // Llama-3.1-8B on 8 x A100 40GB (the page's OOM example): more GPUs, recompute,
           // ZeRO-3 layouts of the search with other tp, cp, pp
           "pretrain --tp 4 --cp 2 --pp 1 --mbs 2",
           // without sequence parallelism: turning it on is leaving out --no-sp (tp 8, where
           // SP alone fits: 32.72 GiB)
           "pretrain --tp 8 --cp 1 --pp 1 --mbs 2 --no-sp",
           // an uneven pipeline: the search's layouts split the layers themselves
           // (--first-stage-layers 0; --pipeline-layout '', an empty shell word)
           "pretrain --tp 2 --cp 1 --pp 4 --mbs 2 --first-stage-layers 5",
           // 32 layers over pp 3 with a first stage of 10: the search's layouts keep the
           // unevenness as --uneven-pipeline (parallel.uneven_pipeline in the set)
           "pretrain --gpus 12 --tp 4 --pp 3 --first-stage-layers 10 --mbs 4 --global-batch 48",
           // a pipeline layout, cleared by the layouts of the search (one of them interleaved:
           // vpp 4 at 4096 tokens)
           "pretrain --tp 2 --pp 4 --mbs 4 --seq-len 4096 --vpp 2 --pipeline-layout 'Et*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4L'"}) {
    CAPTURE(args);
    for (const std::string& c : check_suggestion_flags(args)) all.push_back(c);
  }
  CHECK(any_change(all, "recompute full"));
  CHECK(any_change(all, "ZeRO-3"));
  CHECK(any_change(all, "sequence parallelism on"));
  CHECK(any_change(all, "GPUs"));
  CHECK(any_change(all, "tp 2, cp 2, pp 2"));
  CHECK(any_change(all, "vpp 4"));
}

TEST_CASE("--recompute-modules reaches the library on pretrain and search and an empty or unknown name names the flag (1.11)") {
  // The small MoE of tests/unit/test_recompute_modules.cpp as a qwen3_moe config.json: s 16,
  // tp 2 with SP, 4 MoE layers, selective recomputation. Per layer the routed parts 320 + 4096 +
  // 3072 + 2112 = 9600 bytes and the pre-MLP norm's output 1024.
  const std::string config = temp_path("small_qwen3_moe.json");
  std::ofstream(config) << R"({"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 16, "intermediate_size": 256,
    "moe_intermediate_size": 32, "num_experts": 8, "num_experts_per_tok": 2, "vocab_size": 100,
    "max_position_embeddings": 64, "decoder_sparse_step": 1, "mlp_only_layers": [],
    "tie_word_embeddings": false})";
  const std::string base = "pretrain --config '" + config + "' -g h100-80gb --gpus 2 --tp 2 --pp 1 "
                           "--zero 1 --seq 16 --mbs 1 --global-batch 4 --recompute selective ";
  auto activations = [](const Run& r) {
    REQUIRE(r.rc == 0);
    return json::parse(r.out)["stages"][0]["activations_bytes"].get<double>();
  };
  const Run plain = run(base + "--format json");
  CHECK(json::parse(plain.out)["training"]["recompute_modules"] == json::array({"core_attn"}));
  const Run moe = run(base + "--recompute-modules moe --format json");
  CHECK(activations(plain) - activations(moe) == 4 * 9600.0);
  const Run both = run(base + "--recompute-modules layernorm,moe --format json");
  CHECK(activations(plain) - activations(both) == 4 * (9600.0 + 1024.0));
  CHECK(json::parse(both.out)["training"]["recompute_modules"] == json::array({"layernorm", "moe"}));
  // the same figures as `memest request` with the JSON field
  const std::string request =
      json{{"mode", "pretrain"},
           {"model", json::parse(read_file(config))},
           {"gpu", "h100-80gb"},
           {"parallel", {{"gpus", 2}, {"tp", 2}, {"pp", 1}, {"zero", 1}}},
           {"training",
            {{"seq_len", 16}, {"micro_batch", 1}, {"global_batch", 4}, {"recompute", "selective"},
             {"recompute_modules", {"layernorm", "moe"}}}}}
          .dump();
  const Run req = run("request", &request);
  REQUIRE(req.rc == 0);
  CHECK(json::parse(req.out)["peak_bytes"] == json::parse(both.out)["peak_bytes"]);
  // the table names the modules other than Megatron's default
  const Run table = run(base + "--recompute-modules layernorm,moe");
  REQUIRE(table.rc == 0);
  CHECK(table.out.find("recompute selective (layernorm, moe)") != std::string::npos);
  CHECK(run(base).out.find("recompute selective |") != std::string::npos);
  // the library refuses them where they mean nothing, naming the field
  const Run dense = run("pretrain --gpus 8 --recompute selective --recompute-modules moe_act");
  CHECK(dense.rc == 2);
  CHECK(dense.err.find("training.recompute_modules") != std::string::npos);
  // the search takes the flag: under fsdp it is refused by the library, naming the field
  const Run search = run("search --gpus 8 --seq 4096 --global-batch 64 --framework fsdp "
                         "--recompute-modules moe");
  CHECK(search.rc == 2);
  CHECK(search.err.find("training.recompute_modules") != std::string::npos);
  // under megatron the searched layouts keep less: the best one's peak falls
  const std::string search_base = "search --config '" + config + "' -g h100-80gb --gpus 2 --seq 16 "
                                  "--global-batch 4 --recompute selective --top 1 --format json ";
  const Run searched = run(search_base + "--recompute-modules layernorm,moe");
  const Run searched_plain = run(search_base);
  REQUIRE(searched.rc == 0);
  REQUIRE(searched_plain.rc == 0);
  const json best = json::parse(searched.out)["results"][0];
  const json best_plain = json::parse(searched_plain.out)["results"][0];
  CHECK(best["layout"] == best_plain["layout"]);
  CHECK(best["peak_bytes"].get<double>() < best_plain["peak_bytes"].get<double>());
  // flag-level errors: exit 2, the flag named, nothing on stdout
  for (const char* bad : {"--recompute-modules moe,,layernorm", "--recompute-modules ,moe",
                          "--recompute-modules moe,", "--recompute-modules ''",
                          "--recompute-modules attn"}) {
    CAPTURE(bad);
    const Run r = run(base + bad);
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("--recompute-modules") != std::string::npos);
  }
  CHECK(run(base + "--recompute-modules moe,,layernorm").err.find("an empty module name") != std::string::npos);
  CHECK(run(base + "--recompute-modules attn").err.find("unknown module \"attn\"") != std::string::npos);
  std::remove(config.c_str());
}

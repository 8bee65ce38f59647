// Launch-file import and emit (libmemest/src/launch/): each reader and mapper on hand-derived
// values. The collected real files and their hand-written requests are checked end to end by
// the "launch: collected runs" test (scripts/launch/check_import.py).
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "helpers.hpp"
#include "launch/emit.hpp"
#include "launch/import.hpp"
#include "launch/model_names.hpp"
#include "launch/sources.hpp"

namespace {

using json = nlohmann::json;
using memest::launch::emit_launch;
using memest::launch::import_launch;
using memest::launch::ImportOptions;
using memest::launch::ImportResult;
using memest::launch::LaunchFile;
using memest::launch::read_shell;
using memest::launch::read_toml;
using memest::launch::read_yaml;
using memest::launch::Setting;
using memest::launch::Settings;
using memest::launch::ShellCommand;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The memest::Error that f throws; nullopt when it returns (any other exception fails the test).
template <typename F>
std::optional<memest::Error> error_of(F&& f) {
  try {
    f();
  } catch (const memest::Error& e) {
    return e;
  }
  return std::nullopt;
}

// The setting under key, required to be there.
const Setting& at(const Settings& s, const std::string& key) {
  const Setting* v = s.peek(key);
  INFO("key " << key);
  REQUIRE(v != nullptr);
  return *v;
}

ShellCommand shell(const std::string& text, const std::vector<std::string>& prefer = {}) {
  return read_shell(LaunchFile{"run.sh", text}, "files[0]", prefer);
}

ImportOptions on_h100() {
  ImportOptions o;
  o.gpu = "h100-80gb";
  return o;
}

ImportResult import_one(const std::string& name, const std::string& text, const ImportOptions& o) {
  return import_launch({LaunchFile{name, text}}, o);
}

// A request field by its dotted path (as the origins name it), required to be there.
const json& field(const ImportResult& r, const std::string& path) {
  const json* v = &r.request;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    INFO("field " << path << " in " << r.request.dump());
    REQUIRE(v->is_object());
    REQUIRE(v->contains(part));
    v = &(*v)[part];
    if (dot == std::string::npos) return *v;
    start = dot + 1;
  }
}

const json& origin(const ImportResult& r, const std::string& path) {
  INFO("origin of " << path << " in " << r.origins.dump());
  REQUIRE(r.origins.contains(path));
  return r.origins[path];
}

// ------------------------------------------------------------------ hand-written files

// torchtitan without [training]: every batch, sequence and checkpointing value is the default.
const char* const kTitanDefaults = R"([model]
name = "llama3"
flavor = "8B"

[parallelism]
data_parallel_shard_degree = 8
)";

std::string titan_pp(const std::string& extra) {
  return "[model]\n"
         "name = \"llama3\"\n"
         "flavor = \"8B\"\n"
         "[parallelism]\n"
         "data_parallel_shard_degree = 4\n"
         "pipeline_parallel_degree = 2\n"
         "pipeline_parallel_schedule = \"Interleaved1F1B\"\n" +
         extra;
}

// A Megatron GPT launch: the GPT-2 tokenizer (vocabulary 50257), 32 layers of 4096.
std::string megatron_script(int tp, const std::string& extra, const std::string& nodes = "") {
  return "#!/bin/bash\n"                                                                  // 1
         "GPUS_PER_NODE=8\n"                                                              // 2
         "torchrun --nproc_per_node $GPUS_PER_NODE " + nodes + "pretrain_gpt.py \\\n"    // 3
         "  --tensor-model-parallel-size " + std::to_string(tp) + " \\\n"                 // 4
         "  --pipeline-model-parallel-size 2 \\\n"                                         // 5
         "  --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \\\n"              // 6
         "  --seq-length 2048 --max-position-embeddings 2048 \\\n"                         // 7
         "  --micro-batch-size 1 --global-batch-size 64 \\\n"                              // 8
         "  --tokenizer-type GPT2BPETokenizer \\\n"                                        // 9
         "  --bf16" + extra + "\n";                                                       // 10
}

}  // namespace

// ================================================================== read_shell

TEST_CASE("launch: read_shell expands ${VAR:-default}, $VAR and ${VAR} set earlier") {
  const ShellCommand c = shell(
      "#!/bin/bash\n"
      "B=7\n"
      "C=${B}0\n"
      "torchrun --nproc_per_node 8 train.py --opt1 ${A:-x} --opt2 $B --opt3 $C\n");
  CHECK(c.launcher == "torchrun");
  CHECK(c.script == "train.py");
  CHECK(c.line == 4);
  CHECK(at(c.options, "--opt1").value == "x");  // A is never set: the default
  CHECK(at(c.options, "--opt2").value == "7");
  CHECK(at(c.options, "--opt3").value == "70");
  CHECK(at(c.options, "--opt2").line == 4);
  CHECK(at(c.launcher_options, "--nproc_per_node").value == "8");
  // a value set earlier wins over the default
  const ShellCommand d = shell("A=y\ntorchrun train.py --opt1 ${A:-x}\n");
  CHECK(at(d.options, "--opt1").value == "y");
}

TEST_CASE("launch: read_shell keeps each array item's own line through ${ARR[@]}") {
  const ShellCommand c = shell(
      "#!/bin/bash\n"                               // 1
      "ARGS=(\n"                                    // 2
      "  --tensor-model-parallel-size 2\n"          // 3
      "  --micro-batch-size 4\n"                    // 4
      ")\n"                                         // 5
      "\n"                                          // 6
      "torchrun pretrain_gpt.py \"${ARGS[@]}\" --bf16\n");  // 7
  CHECK(c.script == "pretrain_gpt.py");
  CHECK(at(c.options, "--tensor-model-parallel-size").value == "2");
  CHECK(at(c.options, "--tensor-model-parallel-size").line == 3);
  CHECK(at(c.options, "--micro-batch-size").value == "4");
  CHECK(at(c.options, "--micro-batch-size").line == 4);
  CHECK(at(c.options, "--bf16").value == true);
  CHECK(at(c.options, "--bf16").line == 7);
}

TEST_CASE("launch: read_shell appends NAME+=( ) to an array, NAME=( ) replaces it") {
  const ShellCommand c = shell(
      "ARGS=(--a 1)\n"
      "ARGS+=(--b 2)\n"
      "torchrun train.py ${ARGS[@]}\n");
  CHECK(at(c.options, "--a").value == "1");
  CHECK(at(c.options, "--b").value == "2");
  CHECK(at(c.options, "--b").line == 2);
  const ShellCommand d = shell(
      "ARGS=(--a 1)\n"
      "ARGS=(--b 2)\n"
      "torchrun train.py ${ARGS[@]}\n");
  CHECK_FALSE(d.options.has("--a"));
  CHECK(at(d.options, "--b").value == "2");
}

TEST_CASE("launch: read_shell offers every branch of a condition on $1 and picks by prefer") {
  const std::string text =
      "#!/bin/bash\n"
      "if [ \"$1\" == \"z1\" ]; then\n"
      "  torchrun a.py --deepspeed z1.json\n"
      "elif [ \"$1\" == \"z2\" ]; then\n"
      "  torchrun a.py --deepspeed z2.json\n"
      "fi\n";
  CHECK(at(shell(text, {"z2.json"}).options, "--deepspeed").value == "z2.json");
  CHECK(shell(text, {"z2.json"}).line == 5);
  // the first branch is offered too: a preferred file picks it over the last
  CHECK(at(shell(text, {"configs/z1.json"}).options, "--deepspeed").value == "z1.json");
  CHECK(shell(text, {"z1.json"}).line == 3);
  // no preference: the last
  CHECK(at(shell(text).options, "--deepspeed").value == "z2.json");
  // a preference naming no command's file: the last
  CHECK(at(shell(text, {"other.json"}).options, "--deepspeed").value == "z2.json");
}

TEST_CASE("launch: read_shell follows only the true branch of a condition on a known variable") {
  const std::string text =
      "MODE=full\n"
      "if [[ \"$MODE\" == \"full\" ]]; then\n"
      "  torchrun a.py --deepspeed full.json\n"
      "else\n"
      "  torchrun a.py --deepspeed lora.json\n"
      "fi\n";
  // the else branch is not run: even a preference for its file does not find it
  CHECK(at(shell(text).options, "--deepspeed").value == "full.json");
  CHECK(at(shell(text, {"lora.json"}).options, "--deepspeed").value == "full.json");
  // the other way round: the else branch alone
  const std::string other =
      "MODE=lora\n"
      "if [[ \"$MODE\" == \"full\" ]]; then\n"
      "  torchrun a.py --deepspeed full.json\n"
      "else\n"
      "  torchrun a.py --deepspeed lora.json\n"
      "fi\n"
      "echo done\n";
  CHECK(at(shell(other, {"full.json"}).options, "--deepspeed").value == "lora.json");
}

TEST_CASE("launch: read_shell reads python -m torch.distributed.launch as torchrun") {
  const ShellCommand c = shell(
      "python -m torch.distributed.launch --nproc_per_node=4 train.py "
      "--per_device_train_batch_size 2\n");
  CHECK(c.launcher == "torchrun");
  CHECK(c.script == "train.py");
  CHECK(at(c.launcher_options, "--nproc_per_node").value == "4");
  CHECK(at(c.options, "--per_device_train_batch_size").value == "2");
  CHECK_FALSE(c.options.has("--nproc_per_node"));
}

TEST_CASE("launch: read_shell joins line continuations and counts their lines") {
  const ShellCommand c = shell(
      "torchrun --nproc_per_node 8 \\\n"        // 1
      "  train.py \\\n"                          // 2
      "  --learning_rate 1e-4 \\\n"              // 3
      "  --per_device_train_batch_size 4 \\\n"   // 4
      "  --bf16\n"                               // 5
      "echo finished\n");                        // 6
  CHECK(c.line == 1);
  CHECK(c.script == "train.py");
  CHECK(at(c.options, "--learning_rate").value == "1e-4");
  CHECK(at(c.options, "--learning_rate").line == 3);
  CHECK(at(c.options, "--per_device_train_batch_size").value == "4");
  CHECK(at(c.options, "--per_device_train_batch_size").line == 4);
  CHECK(at(c.options, "--bf16").value == true);
  CHECK(at(c.options, "--bf16").line == 5);
}

TEST_CASE("launch: read_shell refuses an unclosed quote and a script with no training command") {
  const auto quote = error_of([] { shell("torchrun train.py --run_name \"abc\n--bf16\n"); });
  REQUIRE(quote);
  CHECK(quote->status() == MEMEST_ERR_PARSE);
  CHECK(quote->field() == "files[0]");
  CHECK(contains(quote->what(), "files[0]"));
  CHECK(contains(quote->what(), "not closed"));

  const auto none = error_of([] { shell("#!/bin/bash\nset -e\necho hello\nls -l /data\n"); });
  REQUIRE(none);
  CHECK(none->status() == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(none->field() == "files[0]");
  CHECK(contains(none->what(), "no training command"));
}

// bash: ${A-y} gives the default only when A is unset; A= (set, empty) expands to nothing, and
// an unquoted empty expansion is no word, so --x is a bare flag.
TEST_CASE("launch: read_shell ${VAR-default} keeps a variable set to empty") {
  const ShellCommand c = shell("A=\ntorchrun train.py --x ${A-y} --z 1\n");
  CHECK(at(c.options, "--x").value == true);
  CHECK(at(c.options, "--z").value == "1");
}

// ================================================================== read_toml / read_yaml

TEST_CASE("launch: read_toml gives dotted keys, 1-based lines and lists of scalars") {
  const Settings s = read_toml(LaunchFile{"train.toml",
                                          "[job]\n"                              // 1
                                          "dump_folder = \"./out\"\n"            // 2
                                          "\n"                                   // 3
                                          "[training]\n"                         // 4
                                          "local_batch_size = 4\n"               // 5
                                          "seq_len = 8192\n"                     // 6
                                          "[parallelism]\n"                      // 7
                                          "tensor_parallel_degree = 2\n"         // 8
                                          "[compile]\n"                          // 9
                                          "components = [\"model\", \"loss\"]\n" // 10
                                          "[activation_checkpoint]\n"            // 11
                                          "mode = \"full\"\n"},                  // 12
                               "files[0]");
  const Setting& lb = at(s, "training.local_batch_size");
  CHECK(lb.value == 4);
  CHECK(lb.value.is_number_integer());
  CHECK(lb.line == 5);
  CHECK(lb.file == "train.toml");
  CHECK(lb.key == "training.local_batch_size");
  CHECK(at(s, "training.seq_len").line == 6);
  CHECK(at(s, "parallelism.tensor_parallel_degree").value == 2);
  CHECK(at(s, "parallelism.tensor_parallel_degree").line == 8);
  CHECK(at(s, "job.dump_folder").value == "./out");
  CHECK(at(s, "compile.components").value == json::array({"model", "loss"}));
  CHECK(at(s, "compile.components").line == 10);
  CHECK(at(s, "activation_checkpoint.mode").line == 12);
  CHECK(s.all().size() == 6);
  // a dotted key outside a table header reads as the same nested key
  const Settings d = read_toml(LaunchFile{"d.toml", "a = 1\ntraining.seq_len = 4096\n"}, "files[0]");
  CHECK(at(d, "training.seq_len").value == 4096);
  CHECK(at(d, "training.seq_len").line == 2);
}

TEST_CASE("launch: read_yaml gives dotted keys, lines, nulls, and keeps quoted numbers strings") {
  const Settings s = read_yaml(LaunchFile{"c.yaml",
                                          "model:\n"                    // 1
                                          "  _component_: a.b.c\n"      // 2
                                          "  lora_rank: 8\n"            // 3
                                          "batch_size: 2\n"             // 4
                                          "list: [a, b, 3]\n"           // 5
                                          "n1: null\n"                  // 6
                                          "n2: ~\n"                     // 7
                                          "q: \"8\"\n"                  // 8
                                          "p: 8\n"                      // 9
                                          "f: 1.5e-4\n"                 // 10
                                          "t: True\n"},                 // 11
                               "files[0]");
  CHECK(at(s, "model._component_").value == "a.b.c");
  CHECK(at(s, "model._component_").line == 2);
  CHECK(at(s, "model.lora_rank").value == 8);
  CHECK(at(s, "model.lora_rank").line == 3);
  CHECK(at(s, "model.lora_rank").file == "c.yaml");
  CHECK(at(s, "batch_size").line == 4);
  CHECK(at(s, "list").value == json::array({"a", "b", 3}));
  CHECK(at(s, "list").value[2].is_number_integer());
  CHECK(at(s, "n1").value.is_null());
  CHECK(at(s, "n1").line == 6);
  CHECK(at(s, "n2").value.is_null());
  CHECK(at(s, "q").value.is_string());
  CHECK(at(s, "q").value == "8");
  CHECK(at(s, "p").value.is_number_integer());
  CHECK(at(s, "p").value == 8);
  CHECK(at(s, "f").value.is_number_float());
  CHECK(at(s, "f").value.get<double>() == doctest::Approx(1.5e-4));
  CHECK(at(s, "t").value == true);
  CHECK_FALSE(s.has("model"));  // a mapping is its leaves, not a value of its own
}

TEST_CASE("launch: read_yaml reads JSON with line numbers") {
  const Settings s = read_yaml(LaunchFile{"ds.json",
                                          "{\n"                                        // 1
                                          "  \"train_micro_batch_size_per_gpu\": 4,\n"  // 2
                                          "  \"zero_optimization\": {\n"                // 3
                                          "    \"stage\": 3,\n"                         // 4
                                          "    \"reduce_bucket_size\": \"auto\"\n"      // 5
                                          "  }\n"                                      // 6
                                          "}\n"},
                               "files[0]");
  CHECK(at(s, "train_micro_batch_size_per_gpu").value == 4);
  CHECK(at(s, "train_micro_batch_size_per_gpu").line == 2);
  CHECK(at(s, "zero_optimization.stage").value == 3);
  CHECK(at(s, "zero_optimization.stage").line == 4);
  CHECK(at(s, "zero_optimization.reduce_bucket_size").value == "auto");
  CHECK(at(s, "zero_optimization.reduce_bucket_size").line == 5);
}

TEST_CASE("launch: readers refuse deep nesting, NUL bytes and files over 1 MiB, naming the file") {
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  const std::vector<std::pair<std::string, std::function<void(const LaunchFile&)>>> readers = {
      {"toml", [](const LaunchFile& f) { read_toml(f, "files[1]"); }},
      {"yaml", [](const LaunchFile& f) { read_yaml(f, "files[1]"); }},
      {"shell", [](const LaunchFile& f) { read_shell(f, "files[1]"); }}};
  for (const auto& reader : readers) {
    const std::string& what = reader.first;
    const std::function<void(const LaunchFile&)>& read = reader.second;
    CAPTURE(what);
    const auto nested = error_of([&] { read(LaunchFile{"x", "x = " + deep + "\n"}); });
    REQUIRE(nested);
    CHECK(nested->status() == MEMEST_ERR_PARSE);
    CHECK(nested->field() == "files[1]");
    CHECK(contains(nested->what(), "files[1]"));
    CHECK(contains(nested->what(), "100 brackets deep"));

    const auto nul = error_of([&] { read(LaunchFile{"x", std::string("a = 1\n\0b = 2\n", 13)}); });
    REQUIRE(nul);
    CHECK(nul->status() == MEMEST_ERR_PARSE);
    CHECK(nul->field() == "files[1]");
    CHECK(contains(nul->what(), "NUL"));

    std::string big = "a = 1\n#";
    big.resize((1u << 20) + 1, 'x');
    const auto huge = error_of([&] { read(LaunchFile{"x", big}); });
    REQUIRE(huge);
    CHECK(huge->status() == MEMEST_ERR_INVALID_ARGUMENT);
    CHECK(huge->field() == "files[1]");
    CHECK(contains(huge->what(), "1048577 bytes"));
  }
  // 32 levels are allowed, 33 are not
  CHECK_NOTHROW(read_yaml(LaunchFile{"x", "x: " + std::string(32, '[') + std::string(32, ']') + "\n"}, "files[0]"));
  const auto deep33 = error_of([] {
    read_yaml(LaunchFile{"x", "x: " + std::string(33, '[') + std::string(33, ']') + "\n"}, "files[0]");
  });
  REQUIRE(deep33);
  CHECK(deep33->status() == MEMEST_ERR_PARSE);
  // exactly 1 MiB is a launch file
  std::string limit = "a: 1\n#";
  limit.resize(1u << 20, 'x');
  CHECK(at(read_yaml(LaunchFile{"x", limit}, "files[0]"), "a").value == 1);
}

TEST_CASE("launch: read_yaml refuses an alias explosion without expanding it") {
  // a billion laughs: 10^9 leaves in a few hundred bytes
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    const std::string prev = std::string("*") + static_cast<char>(c - 1);
    text += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) text += (i ? ", " : "") + prev;
    text += "]\n";
  }
  const auto e = error_of([&] { read_yaml(LaunchFile{"lol.yaml", text}, "files[0]"); });
  REQUIRE(e);
  CHECK(e->status() == MEMEST_ERR_PARSE);
  CHECK(contains(e->what(), "lol.yaml"));
  CHECK(contains(e->what(), "aliases"));
}

// Every other refusal of a file as a whole names it by its request field ("files[0]"); the
// alias explosion names the file's own name as the field.
TEST_CASE("launch: read_yaml's alias explosion error names the field") {
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    const std::string prev = std::string("*") + static_cast<char>(c - 1);
    text += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) text += (i ? ", " : "") + prev;
    text += "]\n";
  }
  const auto e = error_of([&] { read_yaml(LaunchFile{"lol.yaml", text}, "files[0]"); });
  REQUIRE(e);
  CHECK(e->field() == "files[0]");
  CHECK(contains(e->what(), "files[0]"));
}

TEST_CASE("launch: read_yaml refuses a top-level list as a type error, and broken YAML as a parse error") {
  const auto list = error_of([] { read_yaml(LaunchFile{"l.yaml", "- a\n- b\n"}, "files[2]"); });
  REQUIRE(list);
  CHECK(list->status() == MEMEST_ERR_TYPE);
  CHECK(list->field() == "files[2]");
  CHECK(contains(list->what(), "a list"));

  const auto broken = error_of([] { read_yaml(LaunchFile{"b.yaml", "a: 1\nb: [1, 2\n"}, "files[0]"); });
  REQUIRE(broken);
  CHECK(broken->status() == MEMEST_ERR_PARSE);
  CHECK(broken->field() == "files[0]");

  const auto toml = error_of([] { read_toml(LaunchFile{"b.toml", "a = 1\nb = = 2\n"}, "files[0]"); });
  REQUIRE(toml);
  CHECK(toml->status() == MEMEST_ERR_PARSE);
  CHECK(toml->field() == "files[0]");
  CHECK(contains(toml->what(), "b.toml line 2"));
}

// ================================================================== import_launch: torchtitan

TEST_CASE("launch: torchtitan without [training] takes job_config.py's defaults") {
  const ImportResult r = import_one("train.toml", kTitanDefaults, on_h100());
  CHECK(r.format == "torchtitan");
  CHECK(field(r, "model") == "llama-3.1-8b");
  CHECK(origin(r, "model")["from"] == "file");
  CHECK(origin(r, "model")["key"] == "model.flavor");
  CHECK(origin(r, "model")["line"] == 3);
  // Training.local_batch_size = 8 (no pipeline: the micro-batch)
  CHECK(field(r, "training.micro_batch") == 8);
  CHECK(origin(r, "training.micro_batch")["from"] == "default");
  CHECK(origin(r, "training.micro_batch")["framework"] == "torchtitan");
  CHECK(origin(r, "training.micro_batch")["defined_in"] == "torchtitan/config/job_config.py");
  CHECK(field(r, "training.seq_len") == 2048);
  CHECK(origin(r, "training.seq_len")["from"] == "default");
  // ActivationCheckpoint.mode "selective", selective_ac_option "2": every second block
  CHECK(field(r, "training.recompute") == "full");
  CHECK(field(r, "training.recompute_every") == 2);
  CHECK(origin(r, "training.recompute_every")["from"] == "default");
  // fsdp_reshard_after_forward "default": ZeRO-3; float32 weights
  CHECK(field(r, "parallel.zero") == 3);
  CHECK(field(r, "training.param_dtype") == "fp32");
  CHECK(field(r, "training.framework") == "fsdp");
  // 8 shards x tp 1 x pp 1 x cp 1; global batch 8 x 1 x dp 8
  CHECK(field(r, "parallel.gpus") == 8);
  CHECK(origin(r, "parallel.gpus")["from"] == "derived");
  CHECK(field(r, "training.global_batch") == 64);
  CHECK(origin(r, "training.global_batch")["from"] == "derived");
  CHECK(field(r, "gpu") == "h100-80gb");
  CHECK(origin(r, "gpu")["from"] == "flag");
  CHECK(r.warnings.empty());
}

TEST_CASE("launch: torchtitan Interleaved1F1B holds 2 stages per rank, or layers_per_stage's") {
  {
    const ImportResult r = import_one("pp.toml", titan_pp(""), on_h100());
    CHECK(field(r, "parallel.pp") == 2);
    CHECK(field(r, "parallel.vpp") == 2);
    CHECK(origin(r, "parallel.vpp")["from"] == "default");
    CHECK(origin(r, "parallel.vpp")["defined_in"] == "torchtitan/distributed/pipeline_parallel.py");
    CHECK(field(r, "parallel.uneven_pipeline") == true);
    // 4 shards x pp 2; pipeline micro-batch 1, local batch 8 = 8 micro-batches; global 1 x 8 x dp 4
    CHECK(field(r, "parallel.gpus") == 8);
    CHECK(field(r, "training.micro_batch") == 1);
    CHECK(field(r, "training.global_batch") == 32);
  }
  {
    // llama-3.1-8b: ceil((32 + 2) / 3) = 12 stages over pp 2 = 6 per rank
    const ImportResult r = import_one(
        "pp.toml", titan_pp("pipeline_parallel_layers_per_stage = 3\n"), on_h100());
    CHECK(field(r, "parallel.vpp") == 6);
    CHECK(origin(r, "parallel.vpp")["key"] == "parallelism.pipeline_parallel_layers_per_stage");
    CHECK(origin(r, "parallel.vpp")["line"] == 8);
  }
  // ceil((32 + 2) / 4) = 9 stages: odd, not over pp 2
  const auto e = error_of([] {
    import_one("pp.toml", titan_pp("pipeline_parallel_layers_per_stage = 4\n"), on_h100());
  });
  REQUIRE(e);
  CHECK(e->status() == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(e->field() == "pp.toml:parallelism.pipeline_parallel_layers_per_stage");
  CHECK(contains(e->what(), "9 stages"));
  CHECK(contains(e->what(), "pp.toml line 8"));
}

TEST_CASE("launch: torchtitan HSDP is refused naming data_parallel_replicate_degree") {
  const auto e = error_of([] {
    import_one("hsdp.toml",
               "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\n"
               "data_parallel_shard_degree = 4\ndata_parallel_replicate_degree = 2\n",
               on_h100());
  });
  REQUIRE(e);
  CHECK(e->status() == MEMEST_ERR_UNSUPPORTED);
  CHECK(e->field() == "hsdp.toml:parallelism.data_parallel_replicate_degree");
  CHECK(contains(e->what(), "hsdp.toml line 6"));
  // a replicate degree of 1 is plain FSDP: 4 shards, 4 GPUs
  const ImportResult r = import_one("fsdp.toml",
                                    "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\n"
                                    "data_parallel_shard_degree = 4\ndata_parallel_replicate_degree = 1\n",
                                    on_h100());
  CHECK(field(r, "parallel.gpus") == 4);
}

// ================================================================== import_launch: Megatron

TEST_CASE("launch: Megatron --bf16 keeps fp32 main grads unless --grad-reduce-in-bf16") {
  {
    const ImportResult r = import_one("pretrain.sh", megatron_script(1, ""), on_h100());
    CHECK(r.format == "megatron");
    CHECK(field(r, "training.framework") == "megatron");
    CHECK(field(r, "training.param_dtype") == "bf16");
    CHECK(origin(r, "training.param_dtype")["key"] == "--bf16");
    CHECK(origin(r, "training.param_dtype")["line"] == 10);
    CHECK(field(r, "training.grad_dtype") == "fp32");
    CHECK(origin(r, "training.grad_dtype")["from"] == "default");
    CHECK(origin(r, "training.grad_dtype")["framework"] == "Megatron-LM");
    // the launcher's 8 processes; the file's batch and sequence
    CHECK(field(r, "parallel.gpus") == 8);
    CHECK(origin(r, "parallel.gpus")["key"] == "--nproc_per_node");
    CHECK(field(r, "parallel.tp") == 1);
    CHECK(field(r, "parallel.pp") == 2);
    CHECK(field(r, "training.micro_batch") == 1);
    CHECK(field(r, "training.global_batch") == 64);
    CHECK(origin(r, "training.global_batch")["line"] == 8);
    CHECK(field(r, "training.seq_len") == 2048);
    CHECK(field(r, "parallel.zero") == 0);  // no --use-distributed-optimizer
  }
  {
    const ImportResult r =
        import_one("pretrain.sh", megatron_script(1, " --grad-reduce-in-bf16"), on_h100());
    CHECK(field(r, "training.grad_dtype") == "bf16");
    CHECK(origin(r, "training.grad_dtype")["from"] == "file");
    CHECK(origin(r, "training.grad_dtype")["key"] == "--grad-reduce-in-bf16");
  }
}

TEST_CASE("launch: Megatron --num-layers-per-virtual-pipeline-stage gives vpp") {
  // 32 layers / (pp 2 x 4 layers per virtual stage) = 4 virtual stages per rank
  const ImportResult r = import_one(
      "pretrain.sh", megatron_script(1, " \\\n  --num-layers-per-virtual-pipeline-stage 4"), on_h100());
  CHECK(field(r, "parallel.vpp") == 4);
  CHECK(origin(r, "parallel.vpp")["key"] == "--num-layers-per-virtual-pipeline-stage");
  CHECK(origin(r, "parallel.vpp")["line"] == 11);
  // 5 layers per virtual stage do not divide 16 layers per rank
  const auto e = error_of([] {
    import_one("pretrain.sh", megatron_script(1, " \\\n  --num-layers-per-virtual-pipeline-stage 5"),
               on_h100());
  });
  REQUIRE(e);
  CHECK(e->status() == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(e->field() == "pretrain.sh:--num-layers-per-virtual-pipeline-stage");
}

TEST_CASE("launch: Megatron pads the GPT-2 vocabulary to 128 x tp") {
  {
    // tp 1: a multiple of 128 at or above 50257 is 393 x 128 = 50304
    const ImportResult r = import_one("pretrain.sh", megatron_script(1, ""), on_h100());
    const json& m = field(r, "model");
    REQUIRE(m.is_object());
    CHECK(m["vocab_size"] == 50304);
    CHECK(m["num_hidden_layers"] == 32);
    CHECK(m["hidden_size"] == 4096);
    CHECK(m["num_attention_heads"] == 32);
    CHECK(m["intermediate_size"] == 4 * 4096);  // no --ffn-hidden-size: 4 x hidden
    CHECK(origin(r, "model")["key"] == "--hidden-size");
  }
  {
    // tp 8: a multiple of 1024: 50 x 1024 = 51200
    const ImportResult r = import_one("pretrain.sh", megatron_script(8, "", "--nnodes 2 "), on_h100());
    CHECK(field(r, "model")["vocab_size"] == 51200);
    CHECK(field(r, "parallel.tp") == 8);
    CHECK(field(r, "parallel.gpus") == 16);  // 8 per node x 2 nodes
  }
}

// ================================================================== import_launch: DeepSpeed, HF

TEST_CASE("launch: DeepSpeed's bf16 master weights and optimizer states") {
  // deepspeed/runtime/precision_config.py: bf16_master_weights_and_grads keeps the master
  // partition in bf16, bf16_optimizer_states the moments: K = 2 + 2 x 2 = 6 bytes
  ImportOptions o = on_h100();
  o.model = "llama-3.1-8b";
  o.gpus = 8;
  o.seq_len = 2048;
  const ImportResult r = import_one("ds_config.json",
                                    "{\n"                                                // 1
                                    "  \"train_micro_batch_size_per_gpu\": 1,\n"          // 2
                                    "  \"bf16\": {\"enabled\": true,\n"                 // 3
                                    "           \"bf16_master_weights_and_grads\": true,\n"  // 4
                                    "           \"bf16_optimizer_states\": true},\n"      // 5
                                    "  \"zero_optimization\": {\"stage\": 1}\n"          // 6
                                    "}\n",
                                    o);
  CHECK(field(r, "training.master_weights") == "bf16");
  CHECK(origin(r, "training.master_weights")["line"] == 4);
  CHECK(field(r, "training.optimizer_state_dtype") == "bf16");
  CHECK(origin(r, "training.optimizer_state_dtype")["line"] == 5);
  const json est = test::ok(r.request);
  // 8,030,261,248 parameters x 6 bytes over dp 8
  CHECK(est["stages"][0]["optimizer_bytes"].get<double>() == 6 * 8030261248.0 / 8);
  CHECK(r.warnings.empty());
  // emit writes both keys back
  const json emitted = test::ok({{"mode", "emit"}, {"format", "deepspeed"}, {"request", r.request}});
  const json back = json::parse(emitted["text"].get<std::string>());
  CHECK(back["bf16"]["bf16_master_weights_and_grads"] == true);
  CHECK(back["bf16"]["bf16_optimizer_states"] == true);
  // Megatron's remainders have no DeepSpeed key: refused
  json rem = r.request;
  rem["training"]["master_weights"] = "remainder";
  rem["training"].erase("optimizer_state_dtype");
  const json refused = test::request({{"mode", "emit"}, {"format", "deepspeed"}, {"request", rem}}).body;
  CHECK(refused["ok"] == false);
}

TEST_CASE("launch: DeepSpeed \"auto\" buckets take the HF Trainer's values from hidden_size") {
  ImportOptions o = on_h100();
  o.model = "llama-3.1-8b";  // hidden_size 4096
  o.gpus = 8;
  o.seq_len = 2048;
  const ImportResult r = import_one("ds_config.json",
                                    "{\n"                                                // 1
                                    "  \"train_micro_batch_size_per_gpu\": 2,\n"          // 2
                                    "  \"gradient_accumulation_steps\": 4,\n"             // 3
                                    "  \"bf16\": {\"enabled\": true},\n"                  // 4
                                    "  \"zero_optimization\": {\n"                        // 5
                                    "    \"stage\": 3,\n"                                 // 6
                                    "    \"reduce_bucket_size\": \"auto\",\n"             // 7
                                    "    \"stage3_prefetch_bucket_size\": \"auto\",\n"    // 8
                                    "    \"stage3_param_persistence_threshold\": \"auto\"\n"  // 9
                                    "  }\n"
                                    "}\n",
                                    o);
  CHECK(r.format == "deepspeed");
  // 4096^2 = 16777216; floor(0.9 x 16777216) = floor(15099494.4); 10 x 4096
  CHECK(field(r, "training.buckets.reduce_bucket_size").get<double>() == 16777216.0);
  CHECK(origin(r, "training.buckets.reduce_bucket_size")["line"] == 7);
  CHECK(field(r, "training.buckets.stage3_prefetch_bucket_size").get<double>() == 15099494.0);
  CHECK(origin(r, "training.buckets.stage3_prefetch_bucket_size")["line"] == 8);
  CHECK(field(r, "training.buckets.stage3_param_persistence_threshold").get<double>() == 40960.0);
  CHECK(field(r, "parallel.zero") == 3);
  CHECK(origin(r, "parallel.zero")["line"] == 6);
  CHECK(field(r, "training.framework") == "deepspeed");
  CHECK(field(r, "training.micro_batch") == 2);
  CHECK(field(r, "training.param_dtype") == "bf16");
  CHECK(field(r, "training.grad_dtype") == "bf16");  // ZeRO keeps 16-bit gradients
  // 2 x 4 accumulation x dp 8
  CHECK(field(r, "training.global_batch") == 64);
  CHECK(field(r, "parallel.gpus") == 8);
  CHECK(origin(r, "parallel.gpus")["from"] == "flag");
}

TEST_CASE("launch: an HF Trainer script's global batch is micro x accumulation x GPUs") {
  const ImportResult r = import_one("train.sh",
                                    "#!/bin/bash\n"                                            // 1
                                    "torchrun --nproc_per_node 8 --nnodes 2 train.py \\\n"     // 2
                                    "  --model_name_or_path meta-llama/Llama-3.1-8B \\\n"      // 3
                                    "  --per_device_train_batch_size 4 \\\n"                   // 4
                                    "  --gradient_accumulation_steps 8 \\\n"                   // 5
                                    "  --max_seq_length 2048 --bf16\n",                        // 6
                                    on_h100());
  CHECK(r.format == "hf");
  CHECK(field(r, "model") == "llama-3.1-8b");
  CHECK(origin(r, "model")["line"] == 3);
  CHECK(field(r, "parallel.gpus") == 16);
  CHECK(origin(r, "parallel.gpus")["key"] == "--nproc_per_node");
  CHECK(origin(r, "parallel.gpus")["times"]["key"] == "--nnodes");
  CHECK(field(r, "training.micro_batch") == 4);
  CHECK(origin(r, "training.micro_batch")["line"] == 4);
  CHECK(field(r, "training.seq_len") == 2048);
  // 4 x 8 x 16 data-parallel ranks
  CHECK(field(r, "training.global_batch") == 512);
  CHECK(origin(r, "training.global_batch")["from"] == "derived");
  CHECK(origin(r, "training.global_batch")["accumulation"]["line"] == 5);
  CHECK(field(r, "training.framework") == "pytorch");
  CHECK(field(r, "parallel.zero") == 0);
  CHECK(field(r, "training.autocast") == true);
  CHECK(field(r, "training.param_dtype") == "fp32");
}

// ================================================================== import_launch: fine-tuning

TEST_CASE("launch: torchtune LoRA targets from lora_attn_modules and apply_lora_to_mlp, alpha 16") {
  ImportOptions o = on_h100();
  o.gpus = 8;
  const ImportResult r = import_one("llama3_1_8B_lora.yaml",
                                    "model:\n"                                                    // 1
                                    "  _component_: torchtune.models.llama3_1.lora_llama3_1_8b\n"  // 2
                                    "  lora_attn_modules: [q_proj, v_proj, output_proj]\n"        // 3
                                    "  apply_lora_to_mlp: True\n"                                 // 4
                                    "  lora_rank: 8\n"                                            // 5
                                    "tokenizer:\n"                                                // 6
                                    "  max_seq_len: 2048\n"                                       // 7
                                    "batch_size: 2\n"                                             // 8
                                    "gradient_accumulation_steps: 4\n",                           // 9
                                    o);
  CHECK(r.format == "torchtune");
  CHECK(field(r, "model") == "llama-3.1-8b");
  CHECK(field(r, "training.adapter.type") == "lora");
  CHECK(field(r, "training.adapter.targets") ==
        json::array({"q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}));
  CHECK(origin(r, "training.adapter.targets")["line"] == 4);
  CHECK(field(r, "training.adapter.rank") == 8);
  CHECK(origin(r, "training.adapter.rank")["line"] == 5);
  // lora_llama3_1_8b(..., lora_alpha: float = 16)
  CHECK(field(r, "training.adapter.alpha") == 16);
  CHECK(origin(r, "training.adapter.alpha")["from"] == "default");
  CHECK(origin(r, "training.adapter.alpha")["framework"] == "torchtune");
  CHECK(field(r, "training.seq_len") == 2048);
  CHECK(origin(r, "training.seq_len")["line"] == 7);
  CHECK(field(r, "training.micro_batch") == 2);
  CHECK(field(r, "training.framework") == "fsdp");
  CHECK(field(r, "training.global_batch") == 2 * 4 * 8);
  // without apply_lora_to_mlp: the attention modules alone
  const ImportResult a = import_one("llama3_1_8B_lora.yaml",
                                    "model:\n"
                                    "  _component_: torchtune.models.llama3_1.lora_llama3_1_8b\n"
                                    "  lora_attn_modules: [q_proj, v_proj, output_proj]\n"
                                    "  lora_alpha: 32\n"
                                    "tokenizer:\n"
                                    "  max_seq_len: 2048\n",
                                    o);
  CHECK(field(a, "training.adapter.targets") == json::array({"q_proj", "v_proj", "o_proj"}));
  CHECK(field(a, "training.adapter.alpha") == 32);
  CHECK(origin(a, "training.adapter.alpha")["from"] == "file");
}

TEST_CASE("launch: LLaMA-Factory lora_alpha defaults to twice lora_rank") {
  ImportOptions o = on_h100();
  o.gpus = 4;
  const ImportResult r = import_one("llama3_lora_sft.yaml",
                                    "model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\n"  // 1
                                    "stage: sft\n"                                               // 2
                                    "do_train: true\n"                                           // 3
                                    "finetuning_type: lora\n"                                    // 4
                                    "lora_rank: 16\n"                                            // 5
                                    "lora_target: all\n"                                         // 6
                                    "dataset: alpaca_en_demo\n"                                  // 7
                                    "template: llama3\n"                                         // 8
                                    "cutoff_len: 1024\n"                                         // 9
                                    "per_device_train_batch_size: 1\n"                           // 10
                                    "gradient_accumulation_steps: 8\n"                           // 11
                                    "bf16: true\n",                                              // 12
                                    o);
  CHECK(r.format == "llama-factory");
  CHECK(field(r, "model") == "llama-3.1-8b");
  CHECK(field(r, "training.adapter.rank") == 16);
  CHECK(origin(r, "training.adapter.rank")["line"] == 5);
  CHECK(field(r, "training.adapter.alpha") == 32);
  CHECK(origin(r, "training.adapter.alpha")["from"] == "default");
  CHECK(origin(r, "training.adapter.alpha")["framework"] == "LLaMA-Factory");
  CHECK(field(r, "training.adapter.targets") ==
        json::array({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}));
  CHECK(field(r, "training.seq_len") == 1024);
  CHECK(origin(r, "training.seq_len")["line"] == 9);
  CHECK(field(r, "training.recompute") == "full");  // disable_gradient_checkpointing = False
  CHECK(field(r, "training.global_batch") == 1 * 8 * 4);
}

TEST_CASE("launch: axolotl lora_target_linear adapts an MoE model's router too") {
  ImportOptions o = on_h100();
  o.gpus = 8;
  const std::string body =
      "adapter: lora\n"
      "lora_r: 16\n"
      "lora_alpha: 32\n"
      "lora_target_linear: true\n"
      "sequence_len: 4096\n"
      "micro_batch_size: 1\n";
  const ImportResult r = import_one("mixtral.yaml", "base_model: mistralai/Mixtral-8x7B-v0.1\n" + body, o);
  CHECK(r.format == "axolotl");
  CHECK(field(r, "model") == "mixtral-8x7b");
  CHECK(field(r, "training.adapter.targets") ==
        json::array({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "router"}));
  CHECK(field(r, "training.adapter.rank") == 16);
  CHECK(field(r, "training.adapter.alpha") == 32);
  CHECK(field(r, "training.seq_len") == 4096);
  // a dense model has no router
  const ImportResult d = import_one("llama.yaml", "base_model: meta-llama/Llama-3.1-8B\n" + body, o);
  CHECK(field(d, "model") == "llama-3.1-8b");
  CHECK(field(d, "training.adapter.targets") ==
        json::array({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}));
}

TEST_CASE("launch: a hybrid's in_proj / out_proj targets by their frameworks' names") {
  ImportOptions o = on_h100();
  o.gpus = 1;
  // the tiny Nemotron-H of tests/unit/test_hybrid.cpp: its attention names its output o_proj,
  // its Mamba-2 mixer in_proj and out_proj
  o.model = {{"model_type", "nemotron_h"}, {"hidden_size", 64}, {"num_hidden_layers", 4},
             {"hybrid_override_pattern", "M-*-"}, {"num_attention_heads", 4},
             {"num_key_value_heads", 2}, {"head_dim", 16}, {"intermediate_size", 128},
             {"vocab_size", 100}, {"mamba_num_heads", 8}, {"mamba_head_dim", 16},
             {"ssm_state_size", 16}, {"n_groups", 2}, {"conv_kernel", 4}};
  const std::string body =
      "adapter: lora\n"
      "lora_r: 8\n"
      "lora_target_modules:\n"
      "  - q_proj\n"
      "  - in_proj\n"
      "  - out_proj\n"
      "sequence_len: 256\n"
      "micro_batch_size: 1\n";
  const ImportResult h = import_one("hybrid.yaml", "base_model: nvidia/Nemotron-H-8B-Base-8K\n" + body, o);
  CHECK(h.format == "axolotl");
  CHECK(field(h, "training.adapter.targets") == json::array({"q_proj", "in_proj", "out_proj"}));
  // on a model without such mixers out_proj is the attention's output projection (OPT's name)
  ImportOptions dense = on_h100();
  dense.gpus = 1;
  const ImportResult d = import_one("llama.yaml", "base_model: meta-llama/Llama-3.1-8B\n"
                                    "adapter: lora\nlora_target_modules: [q_proj, out_proj]\n"
                                    "sequence_len: 256\nmicro_batch_size: 1\n", dense);
  CHECK(field(d, "training.adapter.targets") == json::array({"q_proj", "o_proj"}));
  // Qwen3-Next's two input linears are both in_proj (the names are mapped before the model)
  const ImportResult q = import_one("qwen3-next.yaml", "base_model: Qwen/Qwen3-Next-80B-A3B-Instruct\n"
                                    "adapter: lora\nlora_target_modules: [in_proj_qkvz, in_proj_ba, out_proj]\n"
                                    "sequence_len: 256\nmicro_batch_size: 1\n", o);
  CHECK(field(q, "training.adapter.targets") == json::array({"in_proj", "out_proj"}));
}

TEST_CASE("launch: accelerate FSDP is fsdp (FSDP2) with fsdp_version 2, else fsdp1") {
  ImportOptions o = on_h100();
  o.model = "llama-3.1-8b";
  o.seq_len = 2048;
  {
    const ImportResult r = import_one("fsdp2.yaml",
                                      "compute_environment: LOCAL_MACHINE\n"   // 1
                                      "distributed_type: FSDP\n"               // 2
                                      "fsdp_config:\n"                         // 3
                                      "  fsdp_version: 2\n"                    // 4
                                      "  fsdp_reshard_after_forward: false\n"  // 5
                                      "mixed_precision: bf16\n"                // 6
                                      "num_machines: 1\n"                      // 7
                                      "num_processes: 8\n",                    // 8
                                      o);
    CHECK(r.format == "accelerate");
    CHECK(field(r, "training.framework") == "fsdp");
    CHECK(origin(r, "training.framework")["key"] == "fsdp_config.fsdp_version");
    CHECK(origin(r, "training.framework")["line"] == 4);
    CHECK(field(r, "parallel.zero") == 2);  // no reshard after forward
    CHECK(field(r, "parallel.gpus") == 8);
    CHECK(origin(r, "parallel.gpus")["line"] == 8);
  }
  {
    const ImportResult r = import_one("fsdp1.yaml",
                                      "compute_environment: LOCAL_MACHINE\n"   // 1
                                      "distributed_type: FSDP\n"               // 2
                                      "fsdp_config:\n"                         // 3
                                      "  fsdp_sharding_strategy: FULL_SHARD\n" // 4
                                      "mixed_precision: bf16\n"                // 5
                                      "num_processes: 4\n",                    // 6
                                      o);
    CHECK(field(r, "training.framework") == "fsdp1");
    CHECK(origin(r, "training.framework")["key"] == "distributed_type");
    CHECK(origin(r, "training.framework")["line"] == 2);
    CHECK(field(r, "parallel.zero") == 3);
    CHECK(field(r, "parallel.gpus") == 4);
  }
}

// ================================================================== missing values and flags

TEST_CASE("launch: import asks for what the files cannot give, by flag") {
  {
    const auto e = error_of([] { import_one("train.toml", kTitanDefaults, ImportOptions{}); });
    REQUIRE(e);
    CHECK(e->status() == MEMEST_ERR_MISSING_FIELD);
    CHECK(e->field() == "gpu");
    CHECK(contains(e->what(), "--gpu"));
  }
  {
    // data_parallel_shard_degree -1: every visible device, which no file says
    const auto e = error_of([] {
      import_one("train.toml",
                 "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\n"
                 "data_parallel_shard_degree = -1\n",
                 on_h100());
    });
    REQUIRE(e);
    CHECK(e->status() == MEMEST_ERR_MISSING_FIELD);
    CHECK(e->field() == "gpus");
    CHECK(contains(e->what(), "--gpus"));
    // given, the import completes
    ImportOptions o = on_h100();
    o.gpus = 16;
    const ImportResult r = import_one("train.toml",
                                      "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\n"
                                      "data_parallel_shard_degree = -1\n",
                                      o);
    CHECK(field(r, "parallel.gpus") == 16);
    CHECK(field(r, "training.global_batch") == 8 * 16);
  }
}

TEST_CASE("launch: flags override the files") {
  const std::string script =
      "torchrun --nproc_per_node 8 train.py --model_name_or_path meta-llama/Llama-3.1-8B \\\n"
      "  --per_device_train_batch_size 4 --gradient_accumulation_steps 8 --max_seq_length 1024\n";
  {
    ImportOptions o = on_h100();
    o.gpus = 4;
    const ImportResult r = import_one("train.sh", script, o);
    CHECK(field(r, "parallel.gpus") == 4);
    CHECK(origin(r, "parallel.gpus")["from"] == "flag");
    CHECK(origin(r, "parallel.gpus")["flag"] == "--gpus");
    CHECK(field(r, "training.global_batch") == 4 * 8 * 4);
  }
  {
    ImportOptions o = on_h100();
    o.seq_len = 4096;
    o.set = {{"parallel", {{"zero", 2}}}, {"training", {{"micro_batch", 1}}}};
    const ImportResult r = import_one("train.sh", script, o);
    CHECK(field(r, "training.seq_len") == 4096);
    CHECK(origin(r, "training.seq_len")["flag"] == "--seq");
    CHECK(field(r, "parallel.zero") == 2);
    CHECK(origin(r, "parallel.zero")["flag"] == "--set parallel.zero");
    CHECK(field(r, "training.micro_batch") == 1);
    CHECK(field(r, "training.global_batch") == 1 * 8 * 8);
  }
  {
    ImportOptions o = on_h100();
    o.set = {{"parallel", {{"tp", 2}}}};
    const ImportResult r = import_one("pretrain.sh", megatron_script(4, ""), o);
    CHECK(field(r, "parallel.tp") == 2);
    CHECK(origin(r, "parallel.tp")["from"] == "flag");
    CHECK(origin(r, "parallel.tp")["flag"] == "--set parallel.tp");
    CHECK(field(r, "parallel.pp") == 2);  // the rest stays the file's
    CHECK(origin(r, "parallel.pp")["from"] == "file");
  }
}

// Megatron pads the vocabulary to make-vocab-size-divisible-by x tp of the run; when --set
// changes tp, the padding should follow it (128 x 2 = 256: 197 x 256 = 50432), not the file's
// tp 4 (512: 50688).
TEST_CASE("launch: --set parallel.tp redoes Megatron's vocabulary padding") {
  ImportOptions o = on_h100();
  o.set = {{"parallel", {{"tp", 2}}}};
  const ImportResult r = import_one("pretrain.sh", megatron_script(4, ""), o);
  CHECK(field(r, "model")["vocab_size"] == 50432);
}

// ================================================================== model names

TEST_CASE("launch: models by Hugging Face id, torchtitan flavor and torchtune builder") {
  namespace fs = std::filesystem;
  const fs::path empty = fs::temp_directory_path() / ("memest-test-empty-" + std::to_string(::getpid()));
  fs::create_directories(empty);
  using memest::launch::model_by_hf_id;
  auto a = model_by_hf_id("meta-llama/Meta-Llama-3.1-8B-Instruct", empty.string());
  REQUIRE(a);
  CHECK(a->model == "llama-3.1-8b");
  auto q = model_by_hf_id("Qwen/Qwen2.5-7B-Instruct", empty.string());
  REQUIRE(q);
  CHECK(q->model == "qwen2.5-7b");
  CHECK_FALSE(model_by_hf_id("acme/no-such-model-7b", empty.string()));

  auto t = memest::launch::model_by_torchtitan_flavor("deepseek_v3", "16B");
  REQUIRE(t);
  CHECK(t->model == "deepseek-v2-lite");
  CHECK_FALSE(memest::launch::model_by_torchtitan_flavor("llama3", "debugmodel"));
  auto b = memest::launch::model_by_torchtune_builder("torchtune.models.llama3_1.qlora_llama3_1_8b");
  REQUIRE(b);
  CHECK(b->model == "llama-3.1-8b");
  CHECK_FALSE(memest::launch::model_by_torchtune_builder("torchtune.models.acme.acme_3b"));
  fs::remove_all(empty);
}

TEST_CASE("launch: a model found in the Hugging Face cache is its config.json") {
  namespace fs = std::filesystem;
  const fs::path hub = fs::temp_directory_path() / ("memest-test-hub-" + std::to_string(::getpid()));
  const fs::path snap = hub / "models--acme--tiny" / "snapshots" / "abc";
  fs::create_directories(snap);
  {
    std::ofstream out(snap / "config.json");
    out << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
      "intermediate_size": 768, "num_hidden_layers": 4, "num_attention_heads": 4,
      "num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 2048,
      "tie_word_embeddings": false, "hidden_act": "silu"})";
  }
  CHECK(memest::launch::hf_cache_dir_name("acme/tiny") == "models--acme--tiny");
  auto m = memest::launch::model_by_hf_id("acme/tiny", hub.string());
  REQUIRE(m);
  REQUIRE(m->model.is_object());
  CHECK(m->model["hidden_size"] == 256);
  CHECK(m->model["num_hidden_layers"] == 4);
  CHECK(contains(m->how, (snap / "config.json").string()));
  CHECK_FALSE(memest::launch::model_by_hf_id("acme/other", hub.string()));

  // through the import: --model acme/tiny with hf_home
  ImportOptions o = on_h100();
  o.model = "acme/tiny";
  o.hf_home = hub.string();
  o.gpus = 2;
  o.seq_len = 1024;
  const ImportResult r = import_one("ds.json", R"({"zero_optimization": {"stage": 2}})", o);
  CHECK(field(r, "model")["vocab_size"] == 32000);
  CHECK(origin(r, "model")["from"] == "flag");
  fs::remove_all(hub);
}

// ================================================================== emit_launch

namespace {

json megatron_layout() {
  return {{"tp", 2}, {"pp", 2}, {"vpp", 2}, {"dp", 4}, {"sp", true}, {"zero", 1}, {"gpus", 16}};
}
json megatron_training() {
  return {{"micro_batch", 1}, {"global_batch", 512}, {"seq_len", 4096}, {"recompute", "full"},
          {"param_bytes", 2}, {"framework", "megatron"}};
}

std::vector<std::pair<std::string, json>> pairs(const json& emitted) {
  std::vector<std::pair<std::string, json>> out;
  for (const json& s : emitted["settings"]) out.emplace_back(s["key"].get<std::string>(), s["value"]);
  return out;
}

}  // namespace

TEST_CASE("launch: emit megatron writes the layout as Megatron-LM flags, in order") {
  const json out = emit_launch(megatron_layout(), megatron_training(), 32, "megatron", "emit");
  CHECK(out["format"] == "megatron");
  // vpp 2 over pp 2 with 32 layers: 32 / (2 x 2) = 8 layers per virtual stage
  const std::vector<std::pair<std::string, json>> expected = {
      {"--tensor-model-parallel-size", 2},
      {"--pipeline-model-parallel-size", 2},
      {"--num-layers-per-virtual-pipeline-stage", 8},
      {"--sequence-parallel", true},
      {"--use-distributed-optimizer", true},
      {"--micro-batch-size", 1},
      {"--global-batch-size", 512},
      {"--seq-length", 4096},
      {"--recompute-granularity", "full"},
      {"--recompute-method", "uniform"},
      {"--recompute-num-layers", 1},
      {"--bf16", true}};
  CHECK(pairs(out) == expected);
  CHECK(out["text"] ==
        "--tensor-model-parallel-size 2 \\\n--pipeline-model-parallel-size 2 \\\n"
        "--num-layers-per-virtual-pipeline-stage 8 \\\n--sequence-parallel \\\n"
        "--use-distributed-optimizer \\\n--micro-batch-size 1 \\\n--global-batch-size 512 \\\n"
        "--seq-length 4096 \\\n--recompute-granularity full \\\n--recompute-method uniform \\\n"
        "--recompute-num-layers 1 \\\n--bf16\n");

  // no global batch: Megatron's own default, no flag
  json t = megatron_training();
  t["global_batch"] = 0;
  const auto p = pairs(emit_launch(megatron_layout(), t, 32, "megatron", "emit"));
  CHECK(std::none_of(p.begin(), p.end(), [](const auto& kv) { return kv.first == "--global-batch-size"; }));
  CHECK(p.size() == expected.size() - 1);

  // vpp that does not divide the layers: the number of virtual stages instead
  const auto v = pairs(emit_launch(megatron_layout(), megatron_training(), 30, "megatron", "emit"));
  REQUIRE(v.size() > 2);
  CHECK(v[2] == std::pair<std::string, json>{"--num-virtual-stages-per-pipeline-rank", 2});
}

TEST_CASE("launch: emit refuses a layout its stack cannot run") {
  const auto titan = error_of([] {
    emit_launch(megatron_layout(), megatron_training(), 32, "torchtitan", "search.emit");
  });
  REQUIRE(titan);
  CHECK(titan->field() == "search.emit");
  CHECK(contains(titan->what(), "FSDP2"));

  const auto ds = error_of([] {
    emit_launch({{"tp", 2}, {"pp", 1}, {"dp", 4}}, {{"micro_batch", 1}}, 32, "deepspeed", "emit");
  });
  REQUIRE(ds);
  CHECK(ds->field() == "emit");
  CHECK(contains(ds->what(), "data parallel only"));

  const auto unknown = error_of([] {
    emit_launch(megatron_layout(), megatron_training(), 32, "nemo", "format");
  });
  REQUIRE(unknown);
  CHECK(unknown->status() == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(unknown->field() == "format");
}

TEST_CASE("launch: emit deepspeed derives the accumulation and writes the offload") {
  const json out = emit_launch({{"tp", 1}, {"pp", 1}, {"dp", 8}, {"zero", 3}, {"gpus", 8}},
                               {{"micro_batch", 2}, {"global_batch", 64}, {"param_bytes", 2},
                                {"offload", {{"optimizer", true}}}, {"framework", "deepspeed"}},
                               32, "deepspeed", "emit");
  CHECK(out["format"] == "deepspeed");
  const json ds = json::parse(out["text"].get<std::string>());
  CHECK(ds["train_batch_size"] == 64);
  CHECK(ds["train_micro_batch_size_per_gpu"] == 2);
  CHECK(ds["gradient_accumulation_steps"] == 4);  // 64 / (2 x 8)
  CHECK(ds["zero_optimization"]["stage"] == 3);
  CHECK(ds["zero_optimization"]["offload_optimizer"]["device"] == "cpu");
  CHECK_FALSE(ds["zero_optimization"].contains("offload_param"));
  CHECK(ds["bf16"]["enabled"] == true);
  // the settings list holds the same values
  bool seen = false;
  for (const auto& [k, v] : pairs(out)) {
    if (k == "gradient_accumulation_steps") {
      seen = true;
      CHECK(v == 4);
    }
  }
  CHECK(seen);
}

TEST_CASE("launch: emit torchtitan and accelerate for an FSDP2 layout") {
  const json layout = {{"tp", 1}, {"pp", 2}, {"vpp", 2}, {"dp", 4}, {"zero", 3}, {"gpus", 8}};
  const json training = {{"micro_batch", 1}, {"global_batch", 64}, {"seq_len", 8192},
                         {"recompute", "full"}, {"recompute_every", 2}, {"framework", "fsdp"}};
  const json t = emit_launch(layout, training, 32, "torchtitan", "emit");
  std::map<std::string, json> keys;
  for (const json& s : t["settings"]) keys[s["section"].get<std::string>() + "." + s["key"].get<std::string>()] = s["value"];
  CHECK(keys["parallelism.data_parallel_shard_degree"] == 4);
  CHECK(keys["parallelism.pipeline_parallel_degree"] == 2);
  CHECK(keys["parallelism.pipeline_parallel_schedule"] == "Interleaved1F1B");
  CHECK(keys["parallelism.pipeline_parallel_microbatch_size"] == 1);
  CHECK(keys["training.local_batch_size"] == 16);  // 64 sequences over dp 4
  CHECK(keys["training.seq_len"] == 8192);
  CHECK(keys["activation_checkpoint.mode"] == "selective");
  CHECK(keys["activation_checkpoint.selective_ac_option"] == "2");
  // the TOML it writes reads back as the same keys
  const Settings back = read_toml(LaunchFile{"emitted.toml", t["text"].get<std::string>()}, "files[0]");
  CHECK(at(back, "training.local_batch_size").value == 16);
  CHECK(at(back, "activation_checkpoint.selective_ac_option").value == "2");

  const json a = emit_launch({{"tp", 1}, {"pp", 1}, {"dp", 8}, {"zero", 3}, {"gpus", 8}},
                             {{"micro_batch", 1}, {"framework", "fsdp"}}, 32, "accelerate", "emit");
  const Settings acc = read_yaml(LaunchFile{"acc.yaml", a["text"].get<std::string>()}, "files[0]");
  CHECK(at(acc, "distributed_type").value == "FSDP");
  CHECK(at(acc, "fsdp_config.fsdp_version").value == 2);
  CHECK(at(acc, "fsdp_config.fsdp_reshard_after_forward").value == true);
  CHECK(at(acc, "num_processes").value == 8);
}

// ================================================================== the JSON contract

TEST_CASE("launch: memest_request_json mode import and mode emit") {
  const json files = json::array({{{"name", "train.toml"},
                                   {"text",
                                    "[model]\n"                          // 1
                                    "name = \"llama3\"\n"                // 2
                                    "flavor = \"8B\"\n"                  // 3
                                    "[training]\n"                       // 4
                                    "local_batch_size = 1\n"             // 5
                                    "seq_len = 4096\n"                   // 6
                                    "[parallelism]\n"                    // 7
                                    "data_parallel_shard_degree = 8\n"}}});  // 8
  const json r = test::ok({{"mode", "import"}, {"files", files}, {"gpu", "h100-80gb"}});
  CHECK(r["ok"] == true);
  CHECK(r["mode"] == "import");
  CHECK(r["format"] == "torchtitan");
  CHECK(r["request"]["training"]["seq_len"] == 4096);
  CHECK(r["origins"]["training.seq_len"]["line"] == 6);
  CHECK(r["origins"]["training.seq_len"]["file"] == "train.toml");
  CHECK(r["origins"]["training.micro_batch"]["line"] == 5);
  CHECK(r["files"][0]["format"] == "torchtitan");

  // no GPU: refused on "gpu"
  const test::Answer none = test::request(json{{"mode", "import"}, {"files", files}});
  CHECK(none.status == MEMEST_ERR_MISSING_FIELD);
  CHECK(none.body["ok"] == false);
  CHECK(none.body["error"]["field"] == "gpu");

  // emit: an unknown format is refused on "format"
  const json request = {{"model", "llama-3.1-8b"}, {"gpu", "h100-80gb"},
                        {"parallel", {{"gpus", 8}, {"tp", 2}}}, {"training", {{"seq_len", 2048}}}};
  const test::Answer bad = test::request(json{{"mode", "emit"}, {"format", "nemo"}, {"request", request}});
  CHECK(bad.status == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(bad.body["ok"] == false);
  CHECK(bad.body["error"]["field"] == "format");
  // and a known one answers
  const json good = test::ok({{"mode", "emit"}, {"format", "megatron"}, {"request", request}});
  CHECK(good["ok"] == true);
  CHECK(good["format"] == "megatron");
  REQUIRE(good["settings"].is_array());
  CHECK(good["settings"][0]["key"] == "--tensor-model-parallel-size");
  CHECK(good["settings"][0]["value"] == 2);
}

TEST_CASE("launch: a NeMo 1 config's precision, fp8, fp8_params and distributed_fused_adam") {
  // NeMo-Framework-Launcher's conf/training/llama/llama3_8b.yaml spells these as NeMo does:
  // trainer.precision with model.megatron_amp_O2, model.fp8 / fp8_hybrid, model.fp8_params,
  // model.optim.name distributed_fused_adam and optim.grad_sync_dtype.
  const std::string yaml =
      "trainer:\n"                               // 1
      "  devices: 8\n"                           // 2
      "  num_nodes: 1\n"                         // 3
      "  precision: bf16\n"                      // 4
      "model:\n"                                 // 5
      "  micro_batch_size: 1\n"                  // 6
      "  global_batch_size: 128\n"               // 7
      "  tensor_model_parallel_size: 1\n"        // 8
      "  pipeline_model_parallel_size: 1\n"      // 9
      "  encoder_seq_length: 8192\n"             // 10
      "  megatron_amp_O2: true\n"                // 11
      "  fp8: True\n"                            // 12
      "  fp8_hybrid: True\n"                     // 13
      "  fp8_params: True\n"                     // 14
      "  optim:\n"                               // 15
      "    name: distributed_fused_adam\n"       // 16
      "    grad_sync_dtype: bf16\n";             // 17
  auto import = [](const std::string& text) {
    const json files = json::array({{{"name", "llama3_8b.yaml"}, {"text", text}}});
    return test::ok({{"mode", "import"}, {"files", files}, {"gpu", "h100-80gb"}, {"gpus", 8},
                     {"model", "llama-3.1-8b"}});
  };
  const json r = import(yaml);
  CHECK(r["request"]["parallel"]["zero"] == 1);
  CHECK(r["origins"]["parallel.zero"]["line"] == 16);
  CHECK(r["request"]["training"]["fp8"] == true);
  CHECK(r["origins"]["training.fp8"]["line"] == 12);
  CHECK(r["request"]["training"]["param_dtype"] == "fp8");
  CHECK(r["origins"]["training.param_dtype"]["line"] == 14);
  CHECK(r["request"]["training"]["grad_dtype"] == "bf16");
  CHECK(r["origins"]["training.grad_dtype"]["line"] == 17);
  CHECK(r["warnings"].empty());
  // without fp8_params the weights are the bf16 of trainer.precision under O2; without O2 a
  // warning says that NeMo's O1 (fp32 weights under autocast) is counted as O2
  std::string plain = yaml;
  plain.replace(plain.find("  fp8_params: True\n"), std::string("  fp8_params: True\n").size(), "");
  const json p = import(plain);
  CHECK(p["request"]["training"]["param_dtype"] == "bf16");
  CHECK(p["origins"]["training.param_dtype"]["line"] == 4);
  std::string o1 = plain;
  o1.replace(o1.find("  megatron_amp_O2: true\n"), std::string("  megatron_amp_O2: true\n").size(), "");
  const json w = import(o1);
  REQUIRE(w["warnings"].size() == 1);
  CHECK(w["warnings"][0].dump().find("megatron_amp_O2") != std::string::npos);
}

TEST_CASE("launch: how NeMo's DistributedFusedAdam and Megatron's precision-aware optimizer store K") {
  // NeMo megatron_base_model.py setup_optimization: fp8_params keeps a master in optim.dtype
  // (store_params), optim.dtype equal to the bf16 weights none, fp32 over bf16 the remainders.
  auto nemo = [](const std::string& extra_model, const std::string& extra_optim) {
    return "trainer:\n"                               // 1
           "  devices: 8\n"                           // 2
           "  num_nodes: 1\n"                         // 3
           "  precision: bf16\n"                      // 4
           "model:\n"                                 // 5
           "  micro_batch_size: 1\n"                  // 6
           "  global_batch_size: 128\n"               // 7
           "  encoder_seq_length: 2048\n"             // 8
           "  megatron_amp_O2: true\n" +              // 9
           extra_model +                              // 10 (when given)
           "  optim:\n"
           "    name: distributed_fused_adam\n" +
           extra_optim;
  };
  auto import = [](const std::string& text, const char* name) {
    const json files = json::array({{{"name", name}, {"text", text}}});
    return test::ok({{"mode", "import"}, {"files", files}, {"gpu", "h100-80gb"}, {"gpus", 8},
                     {"model", "llama-3.1-8b"}});
  };
  // Llama 3.1's recipe: fp32 states over bf16 weights -> remainders (derived), K 10
  const json llama = import(nemo("", ""), "llama3_8b.yaml");
  CHECK(llama["request"]["training"]["master_weights"] == "remainder");
  CHECK(!llama["request"]["training"].contains("optimizer_state_dtype"));
  CHECK(llama["origins"]["training.master_weights"]["from"] == "derived");
  // Nemotron-4 340B's: optim.dtype bf16 over bf16 weights -> bf16 moments, no master
  const json nemotron = import(nemo("", "    dtype: bf16\n"), "nemotron4_340b.yaml");
  CHECK(nemotron["request"]["training"]["optimizer_state_dtype"] == "bf16");
  CHECK(nemotron["request"]["training"]["master_weights"] == "none");
  // ... in fp8 with fp8_params: a bf16 master beside fp8 weights (line 12)
  const json fp8 = import(nemo("  fp8: True\n  fp8_hybrid: True\n  fp8_params: True\n",
                               "    dtype: bf16\n"), "nemotron4_340b.yaml");
  CHECK(fp8["request"]["training"]["param_dtype"] == "fp8");
  CHECK(fp8["request"]["training"]["master_weights"] == "bf16");
  // fp8_params without fp8 (GPT-3 175B's yaml) still stores an fp32 master: store_params
  const json gpt3 = import(nemo("  fp8_params: true\n", ""), "gpt3_175b.yaml");
  CHECK(gpt3["request"]["training"]["master_weights"] == "fp32");
  CHECK(gpt3["origins"]["training.master_weights"]["line"] == 10);
  // optim.store_params given says it itself
  const json given = import(nemo("", "    store_params: true\n"), "llama3_8b.yaml");
  CHECK(given["request"]["training"]["master_weights"] == "fp32");
  // the estimate of the imported Nemotron request keeps 4 bytes of K
  json req = nemotron["request"];
  req["parallel"]["zero"] = 1;
  const json est = test::ok(req);
  CHECK(est["stages"][0]["optimizer_bytes"].get<double>() ==
        4 * est["stages"][0]["parameters"].get<double>() / 8);

  // Megatron-LM: --use-precision-aware-optimizer with fp32 main params over --bf16 -> remainders;
  // --exp-avg-dtype / --exp-avg-sq-dtype bf16 -> bf16 moments; without the flag they are ignored
  auto megatron = [](const std::string& flags) {
    return "torchrun pretrain_gpt.py --tensor-model-parallel-size 1 --micro-batch-size 1 "
           "--global-batch-size 8 --seq-length 2048 --bf16 --use-distributed-optimizer " +
           flags + "\n";
  };
  const json aware = import(megatron("--use-precision-aware-optimizer --exp-avg-dtype bf16 "
                                     "--exp-avg-sq-dtype bf16"), "train.sh");
  CHECK(aware["request"]["training"]["master_weights"] == "remainder");
  CHECK(aware["request"]["training"]["optimizer_state_dtype"] == "bf16");
  CHECK(aware["warnings"].empty());
  const json fp16 = import(megatron("--use-precision-aware-optimizer --main-params-dtype fp16"),
                           "train.sh");
  CHECK(fp16["request"]["training"]["master_weights"] == "fp16");
  const json mixed = import(megatron("--use-precision-aware-optimizer --exp-avg-dtype bf16"),
                            "train.sh");
  CHECK(mixed["request"]["training"]["optimizer_state_dtype"] == "fp32");  // the wider
  REQUIRE(mixed["warnings"].size() == 1);
  const json ignored = import(megatron("--exp-avg-dtype bf16"), "train.sh");
  CHECK(!ignored["request"]["training"].contains("optimizer_state_dtype"));
  CHECK(!ignored["request"]["training"].contains("master_weights"));
  REQUIRE(ignored["warnings"].size() == 1);
  CHECK(ignored["warnings"][0].dump().find("precision-aware") != std::string::npos);

  // emit writes them back as the same flags, and the flags import to the same storage
  json layout = test::ok(aware["request"]);
  json plan = aware["request"];
  const json emitted = test::ok({{"mode", "emit"}, {"format", "megatron"}, {"request", plan}});
  const std::string text = emitted["text"];
  CHECK(text.find("--use-precision-aware-optimizer") != std::string::npos);
  CHECK(text.find("--exp-avg-dtype bf16") != std::string::npos);
  CHECK(text.find("--exp-avg-sq-dtype bf16") != std::string::npos);
  CHECK(text.find("--main-params-dtype") == std::string::npos);  // fp32 is its default
  const json back = import("torchrun pretrain_gpt.py " + text, "train.sh");
  CHECK(back["request"]["training"]["master_weights"] == "remainder");
  CHECK(back["request"]["training"]["optimizer_state_dtype"] == "bf16");
  CHECK(test::ok(back["request"])["stages"][0]["optimizer_bytes"] ==
        layout["stages"][0]["optimizer_bytes"]);
  // the default stores nothing to say; NeMo's no-master store has no Megatron-LM flag
  plan["training"].erase("optimizer_state_dtype");
  plan["training"].erase("master_weights");
  const json plain = test::ok({{"mode", "emit"}, {"format", "megatron"}, {"request", plan}});
  CHECK(plain["text"].get<std::string>().find("precision-aware") == std::string::npos);
  plan["training"]["master_weights"] = "none";
  const json refused = test::request({{"mode", "emit"}, {"format", "megatron"}, {"request", plan}}).body;
  CHECK(refused["ok"] == false);
  CHECK(refused["error"]["message"].get<std::string>().find("master_weights none") != std::string::npos);
  // fp32 weights echo master none (their own): nothing to write, nothing refused
  plan["training"].erase("master_weights");
  plan["training"]["param_dtype"] = "fp32";
  for (const char* format : {"megatron", "deepspeed"}) {
    CAPTURE(format);
    const json fp32 = test::ok({{"mode", "emit"}, {"format", format}, {"request", plan}});
    CHECK(fp32["text"].get<std::string>().find("precision-aware") == std::string::npos);
    CHECK(fp32["text"].get<std::string>().find("master_weights") == std::string::npos);
  }
}

TEST_CASE("launch: a NeMo 1 config's activations_checkpoint_* is Megatron's recomputation") {
  // NeMo-Framework-Launcher's conf/training/*/*.yaml: model.activations_checkpoint_granularity
  // (null, selective, full), _method and _num_layers, which NeMo hands to Megatron-Core as
  // recompute_granularity, recompute_method and recompute_num_layers.
  auto yaml = [](const std::string& checkpointing) {
    return "trainer:\n"                          // 1
           "  devices: 8\n"                      // 2
           "  num_nodes: 1\n"                    // 3
           "  precision: bf16\n"                 // 4
           "model:\n"                            // 5
           "  micro_batch_size: 1\n"             // 6
           "  global_batch_size: 128\n"          // 7
           "  tensor_model_parallel_size: 1\n"   // 8
           "  pipeline_model_parallel_size: 1\n" // 9
           "  encoder_seq_length: 8192\n"        // 10
           "  megatron_amp_O2: true\n" +         // 11
           checkpointing;                        // 12-
  };
  auto import = [](const std::string& text) {
    const json files = json::array({{{"name", "llama3_8b.yaml"}, {"text", text}}});
    return test::ok({{"mode", "import"}, {"files", files}, {"gpu", "h100-80gb"}, {"gpus", 8},
                     {"model", "llama-3.1-8b"}});
  };
  const json full = import(yaml("  activations_checkpoint_granularity: full\n"
                                "  activations_checkpoint_method: uniform\n"
                                "  activations_checkpoint_num_layers: 1\n"));
  CHECK(full["request"]["training"]["recompute"] == "full");
  CHECK(full["origins"]["training.recompute"]["line"] == 12);
  CHECK(full["warnings"].empty());
  const json selective = import(yaml("  activations_checkpoint_granularity: selective\n"));
  CHECK(selective["request"]["training"]["recompute"] == "selective");
  // null (the launcher's default): no recomputation, Megatron's default
  const json none = import(yaml("  activations_checkpoint_granularity: null\n"
                                "  activations_checkpoint_method: null\n"));
  CHECK(none["request"]["training"]["recompute"] == "none");
  // a group of layers per checkpoint is said, as for --recompute-num-layers
  const json group = import(yaml("  activations_checkpoint_granularity: full\n"
                                 "  activations_checkpoint_method: uniform\n"
                                 "  activations_checkpoint_num_layers: 4\n"));
  REQUIRE(group["warnings"].size() == 1);
  CHECK(group["warnings"][0].dump().find("every group of layers") != std::string::npos);
  // an unknown granularity is refused naming the file and key
  const std::string bad = test::refused_field(
      {{"mode", "import"},
       {"files", json::array({{{"name", "llama3_8b.yaml"},
                               {"text", yaml("  activations_checkpoint_granularity: some\n")}}})},
       {"gpu", "h100-80gb"}, {"gpus", 8}, {"model", "llama-3.1-8b"}});
  CHECK(bad.find("activations_checkpoint_granularity") != std::string::npos);
}

TEST_CASE("launch: Megatron --recompute-modules in and out") {
  // import: the names after the flag (nargs='*') become training.recompute_modules, by line
  const ImportResult r = import_one(
      "pretrain.sh",
      megatron_script(1, " \\\n  --recompute-granularity selective \\\n  --recompute-modules layernorm mlp"),
      on_h100());
  CHECK(field(r, "training.recompute") == "selective");
  CHECK(field(r, "training.recompute_modules") == json::array({"layernorm", "mlp"}));
  CHECK(origin(r, "training.recompute_modules")["key"] == "--recompute-modules");
  CHECK(origin(r, "training.recompute_modules")["line"] == 12);
  // one module is one name
  const ImportResult one = import_one(
      "pretrain.sh",
      megatron_script(1, " \\\n  --recompute-granularity selective \\\n  --recompute-modules mlp"),
      on_h100());
  CHECK(field(one, "training.recompute_modules") == json::array({"mlp"}));

  // emit: the modules in effect after --recompute-granularity selective; Megatron's default
  // core_attn alone needs no flag
  json t = megatron_training();
  t["recompute"] = "selective";
  t["recompute_modules"] = json::array({"layernorm", "moe"});
  const json out = emit_launch(megatron_layout(), t, 32, "megatron", "emit");
  const auto p = pairs(out);
  const auto at = std::find_if(p.begin(), p.end(), [](const auto& kv) { return kv.first == "--recompute-modules"; });
  REQUIRE(at != p.end());
  CHECK(at->second == json::array({"layernorm", "moe"}));
  CHECK(out["text"].get<std::string>().find("--recompute-granularity selective \\\n--recompute-modules layernorm moe \\\n") !=
        std::string::npos);
  t["recompute_modules"] = json::array({"core_attn"});
  const auto d = pairs(emit_launch(megatron_layout(), t, 32, "megatron", "emit"));
  CHECK(std::none_of(d.begin(), d.end(), [](const auto& kv) { return kv.first == "--recompute-modules"; }));
}

// ================================================================== Liger-Kernel (1.12)

namespace {
bool training_has(const ImportResult& r, const std::string& key) {
  return r.request.contains("training") && r.request["training"].contains(key);
}
}  // namespace

TEST_CASE("launch: HF Trainer --use_liger_kernel is Liger's kernels and the fused linear loss") {
  // transformers' Trainer applies Liger with its defaults (rms_norm, swiglu,
  // fused_linear_cross_entropy) and passes the labels: no logits in training
  const std::string head =
      "#!/bin/bash\n"                                          // 1
      "torchrun --nproc_per_node 8 train.py \\\n"              // 2
      "  --model_name_or_path meta-llama/Llama-3.1-8B \\\n"    // 3
      "  --per_device_train_batch_size 2 --max_seq_length 2048 \\\n";  // 4
  const ImportResult r = import_one("train.sh", head + "  --use_liger_kernel --bf16\n", on_h100());  // 5
  CHECK(r.format == "hf");
  CHECK(field(r, "training.use_liger_kernel") == true);
  CHECK(origin(r, "training.use_liger_kernel")["key"] == "--use_liger_kernel");
  CHECK(origin(r, "training.use_liger_kernel")["line"] == 5);
  CHECK(field(r, "training.loss") == "linear_fused");
  CHECK(origin(r, "training.loss")["key"] == "--use_liger_kernel");
  CHECK(r.warnings.dump().find("use_liger_kernel") == std::string::npos);
  // without it: neither
  const ImportResult plain = import_one("train.sh", head + "  --bf16\n", on_h100());
  CHECK_FALSE(training_has(plain, "use_liger_kernel"));
  CHECK((!training_has(plain, "loss") || field(plain, "training.loss") != "linear_fused"));
  // --use_liger_kernel False: neither
  const ImportResult off = import_one("train.sh", head + "  --use_liger_kernel False --bf16\n", on_h100());
  CHECK_FALSE(training_has(off, "use_liger_kernel"));
  // a TrainingArguments YAML file too
  ImportOptions o = on_h100();
  o.gpus = 8;
  const ImportResult yaml = import_one("args.yaml",
                                       "model_name_or_path: meta-llama/Llama-3.1-8B\n"
                                       "per_device_train_batch_size: 2\n"
                                       "max_seq_length: 2048\n"
                                       "use_liger_kernel: true\n",
                                       o);
  CHECK(field(yaml, "training.use_liger_kernel") == true);
  CHECK(field(yaml, "training.loss") == "linear_fused");
  // the mapped request is answered: Liger's blocks under pytorch
  json req = r.request;
  req["mode"] = "pretrain";
  req["training"]["global_batch"] = 16;
  CHECK(test::ok(req)["training"]["use_liger_kernel"] == true);
}

TEST_CASE("launch: LLaMA-Factory enable_liger_kernel is Liger's kernels and the fused linear loss") {
  // src/llamafactory/model/model_utils/liger_kernel.py: stage sft / pt needs no logits
  // (require_logits = stage not in ["pt", "sft"]), so Liger's fused_linear_cross_entropy default
  // stays on
  ImportOptions o = on_h100();
  o.gpus = 4;
  const std::string body =
      "model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\n"  // 1
      "stage: sft\n"                                               // 2
      "finetuning_type: lora\n"                                    // 3
      "cutoff_len: 1024\n"                                         // 4
      "per_device_train_batch_size: 1\n"                           // 5
      "bf16: true\n";                                              // 6
  const ImportResult r = import_one("llama3_lora_sft.yaml", body + "enable_liger_kernel: true\n", o);  // 7
  CHECK(r.format == "llama-factory");
  CHECK(field(r, "training.use_liger_kernel") == true);
  CHECK(origin(r, "training.use_liger_kernel")["line"] == 7);
  CHECK(field(r, "training.loss") == "linear_fused");
  const ImportResult off = import_one("llama3_lora_sft.yaml", body + "enable_liger_kernel: false\n", o);
  CHECK_FALSE(training_has(off, "use_liger_kernel"));
  CHECK((!training_has(off, "loss") || field(off, "training.loss") != "linear_fused"));
}

TEST_CASE("launch: axolotl liger_rms_norm with liger_glu_activation is use_liger_kernel — one alone warns") {
  ImportOptions o = on_h100();
  o.gpus = 8;
  const std::string body =
      "base_model: meta-llama/Llama-3.1-8B\n"                 // 1
      "sequence_len: 4096\n"                                  // 2
      "micro_batch_size: 1\n"                                 // 3
      "plugins:\n"                                            // 4
      "  - axolotl.integrations.liger.LigerPlugin\n";         // 5
  const ImportResult both = import_one("llama.yaml", body +
                                                        "liger_rms_norm: true\n"             // 6
                                                        "liger_glu_activation: true\n"       // 7
                                                        "liger_fused_linear_cross_entropy: true\n",  // 8
                                       o);
  CHECK(both.format == "axolotl");
  CHECK(field(both, "training.use_liger_kernel") == true);
  CHECK(origin(both, "training.use_liger_kernel")["line"] == 6);
  CHECK(field(both, "training.loss") == "linear_fused");
  CHECK(origin(both, "training.loss")["line"] == 8);
  CHECK(both.warnings.dump().find("liger") == std::string::npos);
  // the kernels without the fused loss: no loss change
  const ImportResult kernels = import_one("llama.yaml", body + "liger_rms_norm: true\nliger_glu_activation: true\n", o);
  CHECK(field(kernels, "training.use_liger_kernel") == true);
  CHECK((!training_has(kernels, "loss") || field(kernels, "training.loss") != "linear_fused"));
  // one of the two: partial, nothing mapped, a warning naming it
  const ImportResult norm = import_one("llama.yaml", body + "liger_rms_norm: true\n", o);
  CHECK_FALSE(training_has(norm, "use_liger_kernel"));
  CHECK(norm.warnings.dump().find("liger_rms_norm without liger_glu_activation") != std::string::npos);
  const ImportResult glu = import_one("llama.yaml", body + "liger_glu_activation: true\nliger_rms_norm: false\n", o);
  CHECK_FALSE(training_has(glu, "use_liger_kernel"));
  CHECK(glu.warnings.dump().find("liger_glu_activation without liger_rms_norm") != std::string::npos);
  // the fused loss alone keeps its mapping
  const ImportResult flce = import_one("llama.yaml", body + "liger_fused_linear_cross_entropy: true\n", o);
  CHECK_FALSE(training_has(flce, "use_liger_kernel"));
  CHECK(field(flce, "training.loss") == "linear_fused");
}

TEST_CASE("launch: a Megatron YAML's recompute_granularity: null is no recomputation, from the file") {
  // Megatron-LM's --yaml-cfg files (and its default None) write the granularity as null; it was
  // refused as "must be a string" before.
  const std::string text =
      "tensor_model_parallel_size: 2\n"   // 1
      "micro_batch_size: 1\n"             // 2
      "global_batch_size: 64\n"           // 3
      "seq_length: 4096\n"                // 4
      "recompute_granularity: null\n"     // 5
      "bf16: true\n";                     // 6
  const json out = test::ok({{"mode", "import"},
                             {"files", json::array({{{"name", "gpt.yaml"}, {"text", text}}})},
                             {"gpu", "h100-80gb"}, {"gpus", 8}, {"model", "llama-3.1-8b"}});
  CHECK(out["request"]["training"]["recompute"] == "none");
  CHECK(out["origins"]["training.recompute"]["line"] == 5);
}

// The pretraining request's field registry (libmemest/src/json/request_fields.hpp), row by
// row: its defaults are the core's through the C struct and through JSON, a value other than
// the default reaches the same core request through both, a wrong value is refused naming
// the row's path, the readers accept exactly the registry's keys, the response echoes each
// row, and docs/json-reference.md carries the registry's table.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "capi/convert.hpp"
#include "helpers.hpp"
#include "json/modes.hpp"
#include "json/request_fields.hpp"
#include "model/gpu_profile.hpp"

using namespace memest;

namespace {

const std::vector<RequestField>& rows() { return pretrain_request_fields(); }

test::json base() {
  return {{"mode", "pretrain"}, {"model", "llama-3.1-8b"}, {"gpu", "h100-80gb"}};
}

// Sets the dotted `path` of `doc` to `value`, making the blocks on the way.
void put(test::json& doc, const std::string& path, const test::json& value) {
  test::json* at = &doc;
  std::size_t from = 0;
  for (std::size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', from)) {
    at = &(*at)[path.substr(from, dot - from)];
    from = dot + 1;
  }
  (*at)[path.substr(from)] = value;
}

PretrainRequest from_json(const test::json& doc) {
  const json parsed = doc;
  return parse_pretrain_request(JsonFields(parsed, ""));
}

struct CRequest {
  memest_model model{};
  memest_gpu gpu{};
  memest_pretrain_request request{};
  CRequest() {
    model.struct_size = sizeof model;
    gpu.struct_size = sizeof gpu;
    REQUIRE(memest_model_from_preset("llama-3.1-8b", &model) == MEMEST_OK);
    REQUIRE(memest_gpu_from_preset("h100-80gb", &gpu) == MEMEST_OK);
    REQUIRE(memest_pretrain_request_init(&request, sizeof request) == MEMEST_OK);
    request.model = &model;
    request.gpu = &gpu;
  }
  PretrainRequest to_core() const { return capi::pretrain_request_to_core(&request); }
};

std::string dump(const ojson& v) { return v.dump(); }

// The keys an "unknown field" error lists for `block` (a request with block.bogus_key).
std::set<std::string> known_keys(const std::string& block) {
  test::json doc = base();
  put(doc, block + ".bogus_key", 1);
  const test::Answer a = test::request(doc);
  REQUIRE(a.status == MEMEST_ERR_UNKNOWN_FIELD);
  const std::string message = a.body["error"]["message"].get<std::string>();
  const std::string open = "(known: ";
  const std::size_t from = message.find(open);
  REQUIRE(from != std::string::npos);
  const std::string list = message.substr(from + open.size(), message.rfind(')') - from - open.size());
  std::set<std::string> keys;
  std::stringstream in(list);
  for (std::string k; std::getline(in, k, ',');) keys.insert(k.substr(k.find_first_not_of(' ')));
  return keys;
}

// The registry's keys directly under `block` (a nested block by its name).
std::set<std::string> registry_keys(const std::string& block) {
  std::set<std::string> keys;
  const std::string prefix = block + ".";
  for (const RequestField& f : rows()) {
    const std::string path = f.path;
    if (path.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = path.substr(prefix.size());
    keys.insert(rest.substr(0, rest.find('.')));
  }
  return keys;
}

}  // namespace

TEST_CASE("request fields: the registry has the layout, the training block and the stack") {
  REQUIRE(rows().size() >= 45);
  std::set<std::string> paths;
  for (const RequestField& f : rows()) {
    const std::string path = f.path;
    CAPTURE(path);
    CHECK(paths.insert(f.path).second);  // each path once
    CHECK(std::string(f.doc).size() > 0);
    CHECK(std::string(f.doc).find('|') == std::string::npos);  // a markdown table cell
    CHECK(f.read);
    CHECK(f.value);
    CHECK(!f.example.is_null());
    // every row but the borrowed pipeline_layout string converts through the C struct
    CHECK((f.from_c && f.to_c) == (std::string(f.path) != "parallel.pipeline_layout"));
  }
  for (const char* p : {"parallel.tp", "parallel.sp", "parallel.zero", "training.seq_len",
                        "training.no_sync", "training.loss_chunks", "training.moe_dispatcher",
                        "training.offload.params", "training.buckets.bucket_cap_mb",
                        "training.recompute_modules", "training.moe_capacity_factor"}) {
    CHECK(paths.count(p) == 1);
  }
}

TEST_CASE("request fields: the C struct's defaults, the JSON defaults and the core's agree") {
  const PretrainRequest d;
  CRequest c;
  const PretrainRequest from_c = c.to_core();
  const PretrainRequest json_default = from_json(base());
  for (const RequestField& f : rows()) {
    const std::string path = f.path;
    CAPTURE(path);
    CHECK(dump(f.value(from_c)) == dump(f.value(d)));
    CHECK(dump(f.value(json_default)) == dump(f.value(d)));
  }
}

TEST_CASE("request fields: a value other than the default reaches the same core request "
          "through JSON and through the C struct") {
  const PretrainRequest d;
  for (const RequestField& f : rows()) {
    const std::string path = f.path;
    CAPTURE(path);
    const std::string example = f.example.dump();
    CAPTURE(example);
    test::json doc = base();
    put(doc, f.path, f.example);
    const PretrainRequest from_json_doc = from_json(doc);
    // the JSON reader took it, and changed nothing else of the registry
    CHECK(dump(f.value(from_json_doc)) != dump(f.value(d)));
    for (const RequestField& g : rows()) {
      if (&g == &f) continue;
      const std::string other = g.path;
      CAPTURE(other);
      CHECK(dump(g.value(from_json_doc)) == dump(g.value(d)));
    }
    if (!f.to_c) continue;
    // the same value in the C struct's member: every row of the core request is the same
    CRequest c;
    f.to_c(from_json_doc, c.request);
    const PretrainRequest from_c = c.to_core();
    for (const RequestField& g : rows()) {
      const std::string other = g.path;
      CAPTURE(other);
      CHECK(dump(g.value(from_c)) == dump(g.value(from_json_doc)));
    }
    // and the whole estimate agrees: the same status, field and peak
    test::json estimate = base();
    put(estimate, "parallel.gpus", 8);
    put(estimate, f.path, f.example);
    const test::Answer a = test::request(estimate);
    CRequest c8;
    c8.request.gpus = 8;
    // the JSON reader derives both when left out; _init keeps 4 and 12 (memest.h)
    c8.request.grad_bytes = MEMEST_GRAD_BYTES_DERIVE;
    c8.request.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
    f.to_c(from_json_doc, c8.request);
    memest_pretrain_result res{};
    res.struct_size = sizeof res;
    const memest_status status = memest_pretrain(&c8.request, &res, nullptr, sizeof(memest_stage), 0);
    CHECK(status == a.status);
    if (status == MEMEST_OK && a.status == MEMEST_OK) {
      CHECK(res.peak_bytes == a.body["peak_bytes"].get<double>());
    } else if (status != MEMEST_OK && a.status != MEMEST_OK) {
      CHECK(std::string(memest_last_error_field()) == a.body["error"]["field"].get<std::string>());
    }
  }
}

TEST_CASE("request fields: a wrong type or an out-of-range value is refused naming the path") {
  for (const RequestField& f : rows()) {
    const std::string path = f.path;
    CAPTURE(path);
    std::vector<test::json> bad = {test::json{{"an", "object"}}};
    switch (f.kind) {
      case FieldKind::Integer: bad.push_back(f.int_max + 1); break;
      case FieldKind::Number:
        bad.push_back(f.number_max * 2);
        bad.push_back(f.number_min - 1);
        break;
      case FieldKind::Enum:
      case FieldKind::Dtype: bad.push_back("not-a-name"); break;
      default: break;
    }
    for (const test::json& value : bad) {
      const std::string bad_value = value.dump();
      CAPTURE(bad_value);
      test::json doc = base();
      put(doc, f.path, value);
      const test::Answer a = test::request(doc);
      CHECK(a.status != MEMEST_OK);
      CHECK(a.body["error"]["field"] == f.path);
    }
  }
}

TEST_CASE("request fields: the readers accept the registry's keys, and those by hand") {
  // nested blocks are read from the registry itself; the parallel block's and the training
  // block's lists are written out (their error texts list them in their own order)
  CHECK(known_keys("parallel") == registry_keys("parallel"));
  CHECK(known_keys("training.offload") == registry_keys("training.offload"));
  CHECK(known_keys("training.buckets") == registry_keys("training.buckets"));
  std::set<std::string> training = registry_keys("training");
  for (const char* by_hand : {"param_dtype", "grad_dtype", "optimizer", "optimizer_bytes",
                              "adapter"}) {
    training.insert(by_hand);
  }
  CHECK(known_keys("training") == training);
  const std::set<std::string> listed(std::begin(kPretrainTraining), std::end(kPretrainTraining));
  CHECK(listed == training);
}

TEST_CASE("request fields: the pretrain response echoes every echoed row") {
  test::json doc = base();
  put(doc, "parallel.gpus", 8);
  const test::Answer a = test::request(doc);
  REQUIRE(a.status == MEMEST_OK);
  for (const RequestField& f : rows()) {
    const std::string path = f.path;
    CAPTURE(path);
    std::string section = f.parent();
    if (section.rfind("parallel", 0) == 0) section.replace(0, 8, "layout");
    std::replace(section.begin(), section.end(), '.', '/');
    const test::json::json_pointer at("/" + section);
    if (!f.echoed) {  // training.buckets: not echoed
      CHECK(!(a.body.contains(at) && a.body[at].contains(f.key())));
      continue;
    }
    REQUIRE(a.body.contains(at));
    CHECK(a.body[at].contains(f.key()));
  }
}

TEST_CASE("request fields: mode \"fields\" lists every row with its default") {
  const test::Answer a = test::request(test::json{{"mode", "fields"}});
  REQUIRE(a.status == MEMEST_OK);
  const test::json& listed = a.body["fields"];
  REQUIRE(listed.size() == rows().size());
  const PretrainRequest d;
  for (std::size_t i = 0; i < rows().size(); ++i) {
    const RequestField& f = rows()[i];
    const std::string path = f.path;
    CAPTURE(path);
    CHECK(listed[i]["path"] == f.path);
    CHECK(listed[i]["default"].dump() == dump(f.value(d)));
    CHECK(listed[i]["doc"] == f.doc);
    CHECK(listed[i].contains("kind"));
  }
  CHECK(test::request(test::json{{"mode", "fields"}, {"x", 1}}).status == MEMEST_ERR_UNKNOWN_FIELD);
}

TEST_CASE("request fields: docs/json-reference.md carries the registry's table") {
  // MEMEST_UPDATE_DOCS=1 writes the table between the markers instead of comparing
  const std::string path = std::string(MEMEST_TEST_DATA) + "/../../docs/json-reference.md";
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string begin = "<!-- request-fields:begin -->\n", end = "<!-- request-fields:end -->";
  const std::size_t from = text.find(begin), to = text.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  const std::string table = request_fields_markdown();
  const char* update = std::getenv("MEMEST_UPDATE_DOCS");
  if (update != nullptr && std::string(update) == "1") {
    text.replace(from + begin.size(), to - from - begin.size(), table);
    std::ofstream(path) << text;
    return;
  }
  // run with MEMEST_UPDATE_DOCS=1 after changing a row
  CHECK(text.substr(from + begin.size(), to - from - begin.size()) == table);
}

TEST_CASE("request fields: the JSON fuzzer's dictionary holds every key, profile field and name") {
  // tests/fuzz/request.dict feeds fuzz_request (scripts/fuzz.sh) the request vocabulary: every
  // registry row's key, every GPU profile field and every enumeration's names, so that the
  // fuzzer reaches a field added later without guessing its spelling.
  const std::string path = std::string(MEMEST_TEST_DATA) + "/../fuzz/request.dict";
  std::ifstream in(path);
  REQUIRE(in.good());
  std::set<std::string> entries;
  for (std::string line; std::getline(in, line);) {
    if (line.size() > 6 && line.rfind("\"\\\"", 0) == 0) {
      entries.insert(line.substr(3, line.size() - 6));
    }
  }
  auto held = [&](const std::string& word) {
    CAPTURE(word);
    CHECK(entries.count(word) == 1);
  };
  for (const RequestField& f : rows()) held(f.key());
  for (const GpuProfileField& g : kGpuProfileFields) held(g.key);
  for (uint32_t kind = 0; kind < MEMEST_ENUM_COUNT; ++kind) {
    const auto which = static_cast<memest_enum>(kind);
    for (uint32_t v = 0; v < memest_enum_count(which); ++v) {
      const char* name = memest_enum_name(which, static_cast<int32_t>(v));
      if (name != nullptr) held(name);
    }
  }
}

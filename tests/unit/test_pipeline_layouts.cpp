// Uneven and custom pipeline layouts: Megatron-LM's --decoder-first/last-pipeline-num-layers,
// its --pipeline-model-parallel-layout string (megatron/core/transformer/
// pipeline_parallel_layer_layout.py), the uneven split the search uses, and where the
// multi-token-prediction modules sit. Every expected value is derived by hand in the comments.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "helpers.hpp"
#include "requests.hpp"
#include "plan/plan.hpp"

namespace {

using test::json;
using test::ok;
using test::refused_field;

// A tiny DeepSeek-style MoE: h = 64, 4 heads of 16, dense FFN 256, 8 routed experts of width
// 32, top-2, one shared expert of width 64, the first layer dense, vocab 100, untied.
json tiny_moe(int layers, int mtp, int dense_first = 1) {
  return {{"hidden_size", 64},         {"num_hidden_layers", layers}, {"num_attention_heads", 4},
          {"num_key_value_heads", 4},  {"intermediate_size", 256},    {"vocab_size", 100},
          {"num_experts", 8},          {"num_experts_per_tok", 2},    {"moe_intermediate_size", 32},
          {"n_shared_experts", 1},     {"shared_expert_intermediate_size", 64},
          {"first_k_dense_replace", dense_first}, {"num_nextn_predict_layers", mtp}};
}

json request(const json& model, const json& parallel) {
  return {{"mode", "pretrain"},
          {"model", model},
          {"gpu", "h100-80gb"},
          {"parallel", parallel},
          {"training", {{"seq_len", 256}, {"micro_batch", 1}}}};
}

}  // namespace

TEST_CASE("Megatron's layout string: DeepSeek-V3's documented PP16 x VPP2 split") {
  // "Et*3|(tt|)*29,m|L" (Megatron-LM docs, custom pipeline layout) expands to 32 virtual
  // stages: [E t t t], 29 x [t t], [m], [L]. Rank r holds chunks r and r + 16:
  // rank 0: 3 + 2 = 5 layers; ranks 1-13: 2 + 2; rank 14: 2 + the MTP stage (0 decoders);
  // rank 15: 2 + the loss stage. 5 + 13 * 4 + 2 + 2 = 61.
  memest::StageLayers s;
  int64_t vpp = 0;
  std::string why;
  REQUIRE(memest::parse_pipeline_layout("Et*3|(tt|)*29,m|L", 16, 61, 1, s, vpp, why));
  CHECK(vpp == 2);
  CHECK(s.rank.size() == 16);
  CHECK(s.rank[0] == 5);
  CHECK(s.rank[1] == 4);
  CHECK(s.rank[13] == 4);
  CHECK(s.rank[14] == 2);
  CHECK(s.rank[15] == 2);
  CHECK(s.mtp_rank == 14);  // chunk 30 = rank 14's second chunk
  CHECK(s.chunks[0] == 3);
  CHECK(s.chunks[30] == 0);
  // chunk 16 (rank 0's second) starts after chunks 0-15: 3 + 15 * 2 = 33
  CHECK(s.chunk_begin[16] == 33);
  CHECK(s.of(0, 16) == 5);
}

TEST_CASE("Layout strings Megatron refuses are refused with the reason") {
  memest::StageLayers s;
  int64_t vpp = 0;
  std::string why;
  auto refused = [&](const std::string& layout, int64_t pp, int64_t layers, int64_t mtp,
                     const std::string& reason) {
    CAPTURE(layout);
    why.clear();
    CHECK_FALSE(memest::parse_pipeline_layout(layout, pp, layers, mtp, s, vpp, why));
    CHECK(why.find(reason) != std::string::npos);
  };
  refused("Et*3|(tt|)*29,m|L", 15, 61, 1, "not a multiple of pp=15");
  refused("tE|tL", 2, 2, 0, "must start with E");
  refused("Et|t", 2, 2, 0, "must end with L");
  refused("Et|tL", 2, 3, 0, "holds 2 decoder layers (t), the model has 3");
  refused("Et|tL", 2, 2, 1, "holds 0 MTP layers");
  refused("Et|xL", 2, 2, 0, "has 'x'");
  refused("E(tt|L", 2, 2, 0, "without its ')'");
  refused("E((t)*2)*2|L", 2, 4, 0, "nests parentheses");
  refused("Et*|tL", 2, 2, 0, "digits after '*'");
  refused("Et*99999999|L", 2, 99999999, 0, "expands past");
  refused("Et|m|t|L", 2, 2, 1, "after an MTP layer");
  refused("Ett|t|m|L", 2, 3, 1, "every MTP layer");  // m on the first rank (chunk 2)
  refused("Ett|m|t|L", 2, 3, 1, "after an MTP layer");
  // a byte that is not text (through the typed API) is named escaped, never raw: the message
  // stays valid UTF-8 for every front end
  why.clear();
  CHECK_FALSE(memest::parse_pipeline_layout("Et|\xc3L", 2, 1, 0, s, vpp, why));
  CHECK(why.find('\xc3') == std::string::npos);
  CHECK(why.find("has '") != std::string::npos);
}

TEST_CASE("A layout's parse is remembered per thread, keyed by everything it depends on") {
  // The search parses the request's one layout string for every candidate (a fuzzed
  // "(|...)*n" expanding to 400,000 characters took 1.5 s over a small search); the last
  // answer is kept. Alternating layouts, pp and layer counts must each give a fresh answer.
  memest::StageLayers s;
  int64_t vpp = 0;
  std::string why;
  REQUIRE(memest::parse_pipeline_layout("Et*3|(tt|)*29,m|L", 16, 61, 1, s, vpp, why));
  CHECK(vpp == 2);
  CHECK(s.rank[0] == 5);
  // same string, another pp: refused with its own reason
  why.clear();
  CHECK_FALSE(memest::parse_pipeline_layout("Et*3|(tt|)*29,m|L", 15, 61, 1, s, vpp, why));
  CHECK(why.find("not a multiple of pp=15") != std::string::npos);
  // the same call again: the same refusal and reason (from the memo)
  why.clear();
  CHECK_FALSE(memest::parse_pipeline_layout("Et*3|(tt|)*29,m|L", 15, 61, 1, s, vpp, why));
  CHECK(why.find("not a multiple of pp=15") != std::string::npos);
  // another layer count, another MTP count, another string
  why.clear();
  CHECK_FALSE(memest::parse_pipeline_layout("Et*3|(tt|)*29,m|L", 16, 62, 1, s, vpp, why));
  CHECK(why.find("the model has 62") != std::string::npos);
  why.clear();
  CHECK_FALSE(memest::parse_pipeline_layout("Et*3|(tt|)*29,m|L", 16, 61, 0, s, vpp, why));
  CHECK(why.find("MTP layers (m), the model has 0") != std::string::npos);
  memest::StageLayers t;
  REQUIRE(memest::parse_pipeline_layout("Ettt|tL", 2, 4, 0, t, vpp, why));
  CHECK(vpp == 1);
  CHECK(t.rank == std::vector<int64_t>{3, 1});
  // and back to the first: the whole answer again
  memest::StageLayers u;
  REQUIRE(memest::parse_pipeline_layout("Et*3|(tt|)*29,m|L", 16, 61, 1, u, vpp, why));
  CHECK(vpp == 2);
  CHECK(u.rank == s.rank);
  CHECK(u.chunk_begin == s.chunk_begin);
  CHECK(u.mtp_rank == 14);
}

TEST_CASE("A layout string through the request: MTP on its own rank, with its embedding copy") {
  // 4 layers, pp 3: "Ettt|tm|L" puts layers 0-2 on rank 0, layer 3 and the MTP module on rank
  // 1, only the loss on rank 2. tp 1, ep 2 (expert grid 1 x 2 x 3 = 6 GPUs).
  // One MoE layer: attention 4 * 64 * 64 = 16384, two norms 128, router 8 * 64 = 512, shared
  // expert 3 * 64 * 64 = 12288 -> 29312; routed 8 * 3 * 64 * 32 = 49152, over ep 2: 24576.
  // The MTP module on rank 1: its embedding copy 100 * 64 = 6400 (gpt_model.py builds it where
  // mtp_process), eh_proj 2 * 64 * 64 = 8192, enorm, hnorm, final norm 3 * 64 = 192, and its
  // MoE layer 29312 + 24576: 68672.
  const json r = ok(request(tiny_moe(4, 1), {{"gpus", 6}, {"pp", 3}, {"ep", 2},
                                             {"pipeline_layout", "Ettt|tm|L"}}));
  CHECK(r["layout"]["pipeline_layout"] == "Ettt|tm|L");
  CHECK(r["stages"][0]["layers"] == 3);
  CHECK(r["stages"][1]["layers"] == 1);
  CHECK(r["stages"][2]["layers"] == 0);
  CHECK(r["stages"][0]["experts"]["moe_layers"] == 2);  // layers 1, 2
  CHECK(r["stages"][1]["mtp_parameters"] == 68672.0);
  CHECK_FALSE(r["stages"][2].contains("mtp_parameters"));
  // rank 2: the output layer 100 * 64 = 6400 and the final norm 64
  CHECK(r["stages"][2]["parameters"] == 6464.0);
  // the same module on the last stage (no layout): its parameters are the same, embedding copy
  // included
  const json last = ok(request(tiny_moe(4, 1), {{"gpus", 4}, {"pp", 2}, {"ep", 2}}));
  CHECK(last["stages"][1]["mtp_parameters"] == 68672.0);
}

TEST_CASE("Layout strings in a request: the field named, vpp from the string") {
  // 8 virtual stages over pp 4 need vpp 2. Chunks of 3, 5, 5, 3 | 3, 5, 5, 3 layers: rank 0
  // holds chunks 0 and 4 (6 layers), ranks 1 and 2 ten, rank 3 six -- the same partition as
  // first_stage_layers = last_stage_layers = 6 with vpp 2 (the middle stages (32 - 12) / 2 = 10,
  // each split into two chunks of 5), so every stage's peak must agree.
  const std::string layout = "Et*3|t*5|t*5|t*3|t*3|t*5|t*5|t*3L";
  json req = request("llama-3.1-8b", {{"gpus", 4}, {"pp", 4}, {"pipeline_layout", layout}});
  CHECK(refused_field(req) == "parallel.vpp");
  req["parallel"]["vpp"] = 2;
  const json r = ok(req);
  CHECK(r["stages"][0]["layers"] == 6);
  CHECK(r["stages"][1]["layers"] == 10);
  CHECK(r["stages"][3]["layers"] == 6);
  json ends = request("llama-3.1-8b", {{"gpus", 4}, {"pp", 4}, {"vpp", 2},
                                       {"first_stage_layers", 6}, {"last_stage_layers", 6}});
  const json e = ok(ends);
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(e["stages"][i]["layers"] == r["stages"][i]["layers"]);
    CHECK(e["stages"][i]["peak_bytes"] == r["stages"][i]["peak_bytes"]);
  }
  req["parallel"]["pipeline_layout"] = layout + "x";
  CHECK(refused_field(req) == "parallel.pipeline_layout");
  req["parallel"]["pipeline_layout"] = layout;
  req["parallel"]["last_stage_layers"] = 6;
  CHECK(refused_field(req) == "parallel.pipeline_layout");
}

TEST_CASE("first_stage_layers and last_stage_layers: Megatron's uneven end stages") {
  // DeepSeek-V3's 61 layers over pp 16 with 3 on the first stage and 2 on the last: the 14
  // stages between hold (61 - 5) / 14 = 4 each. The first three layers are dense
  // (first_k_dense_replace 3): stage 0 has no MoE layer, stage 1 (layers 3-6) four.
  json req = request("deepseek-v3", {{"gpus", 1024}, {"tp", 1}, {"pp", 16}, {"ep", 64},
                                     {"first_stage_layers", 3}, {"last_stage_layers", 2}});
  json r = ok(req);
  CHECK(r["stages"][0]["layers"] == 3);
  CHECK(r["stages"][1]["layers"] == 4);
  CHECK(r["stages"][14]["layers"] == 4);
  CHECK(r["stages"][15]["layers"] == 2);
  CHECK(r["stages"][0]["experts"]["moe_layers"] == 0);
  CHECK(r["stages"][1]["experts"]["moe_layers"] == 4);
  CHECK(r["layout"]["first_stage_layers"] == 3);
  // only the first given: the other 15 stages split 58 -- not evenly: refused, naming it
  req["parallel"].erase("last_stage_layers");
  CHECK(refused_field(req) == "parallel.first_stage_layers");

  // With vpp each stage's layers split into vpp chunks, in Megatron's order: 8 layers, pp 2,
  // vpp 2, first 2, last 6: round 0 is rank 0's layer 0 and rank 1's layers 1-3, round 1 rank
  // 0's layer 4 and rank 1's layers 5-7. With layers 0-2 dense: rank 0 holds one MoE layer
  // (4), rank 1 four (3, 5, 6, 7) -- not the 0 and 5 of a contiguous 0-1 / 2-7 split.
  req = request(tiny_moe(8, 0, 3), {{"gpus", 4}, {"pp", 2}, {"vpp", 2}, {"ep", 2},
                                 {"first_stage_layers", 2}, {"last_stage_layers", 6}});
  r = ok(req);
  CHECK(r["stages"][0]["layers"] == 2);
  CHECK(r["stages"][1]["layers"] == 6);
  CHECK(r["stages"][0]["experts"]["moe_layers"] == 1);
  CHECK(r["stages"][1]["experts"]["moe_layers"] == 4);
  // one stage holds every layer: a searched pp = 1 layout's end stages (8 and 8) given back
  json one = request(tiny_moe(8, 0, 3), {{"gpus", 2}, {"ep", 2}, {"first_stage_layers", 8},
                                         {"last_stage_layers", 8}});
  CHECK(ok(one)["stages"][0]["layers"] == 8);
  one["parallel"]["first_stage_layers"] = 7;
  CHECK(refused_field(one) == "parallel.last_stage_layers");
  // an odd end stage cannot split into 2 chunks
  req["parallel"]["first_stage_layers"] = 3;
  req["parallel"]["last_stage_layers"] = 5;
  CHECK(refused_field(req) == "parallel.last_stage_layers");
}

TEST_CASE("The search lays out DeepSeek-V3's 61 layers over 16 stages unevenly") {
  // uneven_pipeline: stages of ceil(61/16) = 4, the end stages give up 64 - 61 = 3, the first
  // the larger half: 2 + 14 * 4 + 3.
  const json req = {{"mode", "search"},
                    {"model", "deepseek-v3"},
                    {"gpu", "h100-80gb"},
                    {"parallel", {{"gpus", 1024}}},
                    {"training", {{"seq_len", 4096}, {"global_batch", 4096}}},
                    {"search", {{"uneven_pipeline", true}, {"layouts", {{{"tp", 1}, {"pp", 16}, {"ep", 64}, {"micro_batch", 1}, {"recompute", "full"}}}}}}};
  const json r = ok(req);
  REQUIRE(r["results"].size() >= 1);
  CHECK(r["results"][0]["layout"]["first_stage_layers"] == 2);
  CHECK(r["results"][0]["layout"]["last_stage_layers"] == 3);
  // the searched layout, given back as a request (the page's "Use"), is the same layout
  json use = {{"mode", "pretrain"}, {"model", "deepseek-v3"}, {"gpu", "h100-80gb"},
              {"parallel", {{"gpus", 1024}, {"tp", 1}, {"pp", 16}, {"ep", 64},
                            {"first_stage_layers", 2}, {"last_stage_layers", 3}}},
              {"training", {{"seq_len", 4096}, {"global_batch", 4096}, {"micro_batch", 1},
                            {"recompute", "full"}}}};
  const json p = ok(use);
  CHECK(p["stages"][0]["layers"] == 2);
  CHECK(p["stages"][15]["layers"] == 3);
  CHECK(p["peak_bytes"] == r["results"][0]["peak_bytes"]);
}

TEST_CASE("DeepSeek-V3.2's sparse-attention indexer: training refused by name, states counted") {
  // the indexer's scores (every key per query and index head) have no activation model: a
  // pretraining peak would miss them, so the request is refused naming the field
  json model = test::load_json("configs/deepseek-v3.2.json");
  const json req = {{"mode", "pretrain"}, {"model", model}, {"gpu", "h100-80gb"},
                    {"parallel", {{"gpus", 1024}, {"pp", 16}, {"ep", 64},
                                  {"first_stage_layers", 3}, {"last_stage_layers", 2}}},
                    {"training", {{"seq_len", 4096}}}};
  const test::Answer a = test::request(req);
  CHECK(a.status == MEMEST_ERR_UNSUPPORTED);
  CHECK(a.body["error"]["field"] == "model.index_n_heads");
  const json states = {{"mode", "model_states"}, {"model", model}, {"gpu", "h100-80gb"},
                       {"parallel", {{"gpus", 8}}}};
  CHECK(ok(states)["model"]["index_n_heads"] == 64);
}

TEST_CASE("Qwen3-235B's 94 layers over 16 stages, stage by stage and searched") {
  // stages of ceil(94/16) = 6, the end stages give up 96 - 94 = 2, one each: 5 + 14 * 6 + 5
  json req = request("qwen3-235b-a22b", {{"gpus", 256}, {"tp", 1}, {"pp", 16}, {"ep", 16},
                                         {"uneven_pipeline", true}});
  const json r = ok(req);
  CHECK(r["stages"][0]["layers"] == 5);
  CHECK(r["stages"][1]["layers"] == 6);
  CHECK(r["stages"][15]["layers"] == 5);
  json search = {{"mode", "search"}, {"model", "qwen3-235b-a22b"}, {"gpu", "h100-80gb"},
                 {"parallel", {{"gpus", 256}}},
                 {"training", {{"seq_len", 4096}, {"global_batch", 1024}}},
                 {"search", {{"uneven_pipeline", true}, {"include_oom", true},
                             {"layouts", {{{"tp", 1}, {"pp", 16}, {"ep", 16}, {"micro_batch", 1},
                                           {"recompute", "full"}}}}}}};
  const json s = ok(search);
  REQUIRE(s["results"].size() == 1);
  CHECK(s["results"][0]["layout"]["first_stage_layers"] == 5);
  CHECK(s["results"][0]["layout"]["last_stage_layers"] == 5);
}

TEST_CASE("The search's peak is the heaviest of every stage, when middle stages differ") {
  // The search computes one stage per shape of middle stage (pretrain/pretrain.cpp
  // peak_memory); memest_pretrain computes them all. Each layout below has a middle stage
  // unlike the second: the search (typed, this layout alone) must give the same peak and
  // estimate.
  struct Case {
    const char* name;
    const char* model;
    int64_t gpus, tp, pp, ep, seq_len, global_batch;
    int32_t recompute;
    const char* pipeline_layout;
    int32_t peak_stage;  // -1: not checked
  };
  const Case cases[] = {
      // a layout string whose third stage holds 16 of the 32 layers (4 + 4 + 16 + 8): the
      // heaviest, though neither the second nor the last (1.17.0's shortcut missed it)
      {"llama-3.1-8b, E t*4 | t*4 | t*16 | t*8 L", "llama-3.1-8b", 32, 2, 4, 1, 4096, 256,
       MEMEST_RECOMPUTE_NONE, "Et*4|t*4|t*16|t*8L", 2},
      // DeepSeek-V3: three dense leading layers, then MoE layers, over 16 uneven stages
      {"deepseek-v3, pp 16", "deepseek-v3", 1024, 1, 16, 64, 4096, 4096, MEMEST_RECOMPUTE_FULL,
       nullptr, -1},
      // Nemotron-H's Mamba / attention / MLP pattern over 4 stages
      {"nemotron-h-56b, pp 4", "nemotron-h-56b", 64, 8, 4, 1, 8192, 256, MEMEST_RECOMPUTE_NONE,
       nullptr, -1},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    memest_test::Pretrain p(c.model, "h100-80gb");
    p.r.gpus = c.gpus, p.r.tp = c.tp, p.r.pp = c.pp, p.r.ep = c.ep;
    p.r.seq_len = c.seq_len, p.r.global_batch = c.global_batch, p.r.micro_batch = 1;
    p.r.recompute = c.recompute;
    p.r.pipeline_layout = c.pipeline_layout;
    p.r.uneven_pipeline = c.pipeline_layout ? 0 : 1;  // a layout string sets every stage
    memest_stage stages[16];
    memest_pretrain_result single;
    const memest_status st = p.run(single, stages, 16);
    const std::string error = memest_last_error();
    CAPTURE(error);
    REQUIRE(st == MEMEST_OK);
    double heaviest = 0;
    for (int64_t i = 0; i < c.pp; ++i) heaviest = std::max(heaviest, stages[i].peak_bytes);
    CHECK(single.peak_bytes == heaviest);
    if (c.peak_stage >= 0) CHECK(single.peak_stage == c.peak_stage);

    memest_layout layout = memest_test::sized<memest_layout>();
    layout.tp = c.tp, layout.cp = 1, layout.pp = c.pp, layout.vpp = 1, layout.micro_batch = 1;
    layout.recompute = c.recompute, layout.zero = 1, layout.ep = c.ep, layout.etp = 0;
    memest_search_request r;
    REQUIRE(memest_search_request_init(&r, sizeof r) == MEMEST_OK);
    r.base = &p.r;
    r.layouts = &layout;
    r.layout_count = 1;
    r.include_oom = 1;
    r.uneven_pipeline = p.r.uneven_pipeline;
    memest_search_result res = memest_test::sized<memest_search_result>();
    memest_search_entry top[1];
    REQUIRE(memest_search(&r, &res, top, sizeof top[0], 1, nullptr, 0) == MEMEST_OK);
    REQUIRE(res.count == 1);
    CHECK(top[0].peak_bytes == single.peak_bytes);
    CHECK(top[0].estimate_bytes == single.estimate_bytes);
  }
}

// Fine-tuning mode (LLMem, Kim et al.): every term worked by hand for OPT-1.3b and LLaMA-7B,
// page rounding, chunk packing and search, the four methods, and Algorithm 1.
#include <doctest/doctest.h>

#include <vector>

#include <cstring>
#include <string>
#include <utility>

#include "finetune/chunks.hpp"
#include "finetune/llmem.hpp"
#include "helpers.hpp"
#include "requests.hpp"

namespace {

// Chunks and waste of packing `sizes` one by one into chunks of `cs` elements, by the Gemini
// rule: a tensor that does not fit the room left opens a new chunk.
std::pair<double, double> reference(const std::vector<double>& sizes, double cs) {
  double chunks = 0, left = 0, used = 0;
  for (const double x : sizes) {
    if (x > left) {
      chunks += 1;
      left = cs;
    }
    left -= x;
    used += x;
  }
  return {chunks, chunks * cs - used};
}

// Packing the tensors of `layer` as runs (tensor_runs) and as one flat list gives the
// reference's chunks and waste at chunk sizes from 4096 to 40000 elements.
void check_against_reference(const std::vector<double>& sizes, const std::vector<int64_t>& layer) {
  const std::vector<memest::TensorRun> runs = memest::tensor_runs(sizes, layer);
  for (double cs = 4096; cs < 40000; cs += 997) {
    CAPTURE(cs);
    const auto [chunks, waste] = reference(sizes, cs);
    const memest::ChunkPlan fast = memest::pack_chunks(runs, cs);
    CHECK(fast.chunks == chunks);
    CHECK(fast.waste_elements == waste);
    const memest::ChunkPlan flat = memest::pack_chunks(sizes, cs);  // one run, one repetition
    CHECK(flat.chunks == chunks);
    CHECK(flat.waste_elements == waste);
  }
}

constexpr double kMiB = 1024.0 * 1024.0;

using Request = memest_test::Finetune;

Request request(const char* model, int64_t gpus, int64_t batch, int64_t seq,
                double chunk_elements) {
  Request f(model, "v100-16gb");
  f.r.gpus = gpus;
  f.r.batch = batch;
  f.r.seq_len = seq;
  f.r.base_bytes = 512 * kMiB;
  f.r.chunk_bytes = chunk_elements * 2;  // B16 bytes per element
  return f;
}

memest_finetune_result run(Request f, memest_finetune_method method, int64_t tp = 0) {
  f.r.method = method;
  f.r.tp = tp;
  memest_finetune_result out = memest_test::sized<memest_finetune_result>();
  const memest_status st = memest_finetune(&f.r, &out);
  INFO(memest_last_error());
  REQUIRE(st == MEMEST_OK);
  return out;
}

}  // namespace

TEST_CASE("Chunk packing: a tensor never straddles chunks — waste is the unused space") {
  // sizes 3, 3, 2 into chunks of 5: [3] [3 2] -> 2 chunks, waste 10 - 8 = 2.
  const memest::ChunkPlan p = memest::pack_chunks({3, 3, 2}, 5);
  CHECK(p.chunks == 2);
  CHECK(p.waste_elements == 2);
  // chunks of 6: [3 3] [2] -> waste 4; chunks of 8: [3 3 2] -> waste 0.
  CHECK(memest::pack_chunks({3, 3, 2}, 6).waste_elements == 4);
  CHECK(memest::pack_chunks({3, 3, 2}, 8).waste_elements == 0);
  // The search starts at the largest tensor and keeps the least waste: candidates 3..9
  // waste 3:1, 4:4, 5:2, 6:4, 7:6, 8:0, 9:1 -> 8.
  memest::ChunkSearch s;
  s.min_elements = 1;
  s.range_elements = 6;
  s.step_elements = 1;
  const memest::ChunkPlan best = memest::search_chunk_size({3, 3, 2}, s);
  CHECK(best.chunk_elements == 8);
  CHECK(best.waste_elements == 0);
}

TEST_CASE("Chunk packing over runs of identical layers equals packing every tensor") {
  // an embedding-side tensor 5, 1000 layers of 3, 7, 2, a final norm 4: tensor_runs merges the
  // layers into one run of 1000 repeats; packing the runs (whole cycles of the room left added
  // at once) must give exactly the chunks and waste of packing the 3002 tensors one by one
  std::vector<double> sizes{5};
  std::vector<int64_t> layer{-1};
  for (int64_t i = 0; i < 1000; ++i) {
    for (const double x : {3.0, 7.0, 2.0}) {
      sizes.push_back(x);
      layer.push_back(i);
    }
  }
  sizes.push_back(4);
  layer.push_back(-1);
  const std::vector<memest::TensorRun> runs = memest::tensor_runs(sizes, layer);
  REQUIRE(runs.size() == 3);
  CHECK(runs[1].repeats == 1000);
  CHECK(runs[1].sizes == std::vector<double>{3, 7, 2});
  for (const double cs : {7.0, 8.0, 11.0, 12.0, 13.0, 17.0, 29.0, 64.0, 1000.0}) {
    CAPTURE(cs);
    const memest::ChunkPlan flat = memest::pack_chunks(sizes, cs);
    const memest::ChunkPlan fast = memest::pack_chunks(runs, cs);
    CHECK(fast.chunks == flat.chunks);
    CHECK(fast.waste_elements == flat.waste_elements);
  }
  // chunks of 12 by hand: [5 3], then each layer's 7 and 2 open a chunk that the next layer's
  // 3 fills (7 + 2 + 3 = 12): 1000 chunks; the final norm 4 its own: 1002
  CHECK(memest::pack_chunks(runs, 12).chunks == 1002);
}

TEST_CASE("Chunk packing of equal consecutive tensors (an MoE layer's experts) equals one by one") {
  // by hand: 7 tensors of 3 into chunks of 10 after a 4: [4 3 3] [3 3 3] [3] -> 3 chunks,
  // waste 30 - 25 = 5
  const memest::ChunkPlan hand = memest::pack_chunks({4, 3, 3, 3, 3, 3, 3, 3}, 10);
  CHECK(hand.chunks == 3);
  CHECK(hand.waste_elements == 5);
  // An MoE-like layer (attention 4 tensors, 128 experts x 3 equal tensors, a router) repeated
  // 48 times, against the one-by-one reference at many chunk sizes.
  std::vector<double> sizes;
  std::vector<int64_t> layer;
  for (int64_t l = 0; l < 48; ++l) {
    for (const double x : {4096.0, 512.0, 512.0, 4096.0}) sizes.push_back(x), layer.push_back(l);
    for (int e = 0; e < 3 * 128; ++e) sizes.push_back(1536.0), layer.push_back(l);
    sizes.push_back(256.0), layer.push_back(l);
  }
  check_against_reference(sizes, layer);
}

TEST_CASE("Chunk packing of experts with biases (a repeating block of tensors) equals one by one") {
  // by hand: (4, 1) five times into chunks of 12 after a 6: [6 4 1] [4 1 4 1] [4 1 4 1] -> 3
  // chunks, waste 36 - 31 = 5
  const memest::ChunkPlan hand = memest::pack_chunks({6, 4, 1, 4, 1, 4, 1, 4, 1, 4, 1}, 12);
  CHECK(hand.chunks == 3);
  CHECK(hand.waste_elements == 5);
  // A layer: attention (4 tensors), 257 experts of (gate weight, gate bias, up weight, up bias,
  // down weight, down bias), a router, 3 layers; and a lone odd tensor between two blocks.
  std::vector<double> sizes;
  std::vector<int64_t> layer;
  for (int64_t l = 0; l < 3; ++l) {
    for (const double x : {4096.0, 512.0, 512.0, 4096.0}) sizes.push_back(x), layer.push_back(l);
    for (int e = 0; e < 257; ++e) {
      for (const double x : {1536.0, 24.0, 1536.0, 24.0, 1536.0, 64.0}) {
        sizes.push_back(x), layer.push_back(l);
      }
    }
    sizes.push_back(77.0), layer.push_back(l);
    for (int e = 0; e < 5; ++e) {
      for (const double x : {300.0, 7.0}) sizes.push_back(x), layer.push_back(l);
    }
  }
  check_against_reference(sizes, layer);
}

TEST_CASE("Chunk packing of tiny tensors (many layers and experts per chunk) equals one by one") {
  // A fuzzed gpt-oss-120b with hidden_size 9 held the whole model in one chunk: every candidate
  // chunk size packed its 36 x 128 experts one by one (1.6 s). Repetitions that fit the room
  // left now go in at once. 40 layers of 4 attention tensors, 50 experts of (weight, bias,
  // weight, bias) and a router: 1 to 12 layers per chunk at the sizes below.
  std::vector<double> sizes;
  std::vector<int64_t> layer;
  for (int64_t l = 0; l < 40; ++l) {
    for (const double x : {81.0, 27.0, 27.0, 81.0}) sizes.push_back(x), layer.push_back(l);
    for (int e = 0; e < 50; ++e) {
      for (const double x : {30.0, 3.0, 30.0, 2.0}) sizes.push_back(x), layer.push_back(l);
    }
    sizes.push_back(11.0), layer.push_back(l);
  }
  check_against_reference(sizes, layer);
}

TEST_CASE("OPT-1.3b, 4 GPUs, bs 4, sl 500, cs = 40 Mi elements: every term by hand") {
  // embed_p = 50272 * 2048 = 102957056; other_p = 1315758080 - embed_p = 1212801024.
  // m_p = ceil((embed_p + ceil(other_p/cs)*cs) * 6 / 2 MiB) * 2 MiB with ceil(...) = 29:
  //   (102957056 + 29 * 41943040) * 6 = 7915831296 -> 3775 pages -> 7916748800.
  // m_os: embeddings 393 + 17 pages, 24 layers * (4 * 16 + 2 * 64) pages = 5018 pages.
  // m_out = ceil((2 + 24) * 4 * 500 * 2048 * 2 / 2 MiB) pages = 102 pages = 213909504.
  // m_lm (fp16 logits, tied head): 4*500*50272*2 -> 96 pages, 2 * (4*499*50272*2 -> 96 pages).
  // m_back (tp 4) = ceil(24 * 4 * 500 * 2048 * 3/4 * 2 / 2 MiB) = 71 pages = 148897792.
  const Request r = request("opt-1.3b", 4, 4, 500, 40 * kMiB);
  const memest_finetune_result cdp = run(r, MEMEST_FINETUNE_CDP);
  CHECK(cdp.parts.base == 536870912.0);
  CHECK(cdp.parts.params == 7916748800.0);
  CHECK(cdp.parts.params_fp16 == 2640314368.0);
  CHECK(cdp.parts.params_fp32 == 5278531584.0);
  CHECK(cdp.parts.optimizer == 10523508736.0);
  CHECK(cdp.parts.outputs == 213909504.0);
  CHECK(cdp.parts.lm_head == 603979776.0);
  CHECK(cdp.peak_bytes == 19795017728.0);
  CHECK(cdp.verdict == MEMEST_VERDICT_OOM);
  CHECK(cdp.chunk_elements == 40 * kMiB);

  const memest_finetune_result zero3 = run(r, MEMEST_FINETUNE_ZERO3);
  CHECK(zero3.peak_bytes == 7945584640.0);  // m_base + m_p16 + (m_p32 + m_os)/4 + m_out + m_lm
  CHECK(zero3.verdict == MEMEST_VERDICT_FITS);
  {
    // peak_verdict carries the product's margin (1.11): the same peak on a GPU it fills to 90 %
    // is tight, while LLMem's own test (verdict: peak <= capacity) says fits; above it, oom.
    // 7945584640 / 0.9 = 8828427377.8 bytes of capacity.
    Request tight = r;
    tight.gpu.memory_bytes = 7945584640.0 / 0.9;
    const memest_finetune_result t90 = run(tight, MEMEST_FINETUNE_ZERO3);
    CHECK(t90.usage_fraction == doctest::Approx(0.9));
    CHECK(t90.peak_verdict == MEMEST_VERDICT_TIGHT);
    CHECK(t90.verdict == MEMEST_VERDICT_FITS);
    tight.gpu.memory_bytes = 7945584640.0 / 0.8;  // 80 % of capacity: below the 0.84 margin
    CHECK(run(tight, MEMEST_FINETUNE_ZERO3).peak_verdict == MEMEST_VERDICT_FITS);
    tight.gpu.memory_bytes = 7945584640.0 / 1.01;
    const memest_finetune_result over = run(tight, MEMEST_FINETUNE_ZERO3);
    CHECK(over.peak_verdict == MEMEST_VERDICT_OOM);
    CHECK(over.verdict == MEMEST_VERDICT_OOM);
  }
  const memest_finetune_result tp = run(r, MEMEST_FINETUNE_TP);
  CHECK(tp.parts.backward_buffer == 148897792.0);
  CHECK(tp.peak_bytes == 6113722368.0);  // m_base + (m_p + m_os)/4 + m_out + m_lm + m_back
  const memest_finetune_result hybrid = run(r, MEMEST_FINETUNE_DP_TP, 2);
  CHECK(hybrid.parts.backward_buffer == 98566144.0);  // (tp - 1)/tp = 1/2
  CHECK(hybrid.peak_bytes == 6723993600.0);           // m_peak^dp - m_p16 * 2/4 + m_back
  CHECK(hybrid.dp == 2);
  // The per-GPU parts add up to the peak.
  const auto& g = hybrid.per_gpu;
  CHECK(g.base + g.params + g.optimizer + g.outputs + g.lm_head + g.backward_buffer == hybrid.peak_bytes);
}

TEST_CASE("LLaMA-7B, 4 GPUs, bs 2, sl 512, cs = 48 Mi elements: fp32 logits, untied head") {
  // embed_p = 32000 * 4096 = 131072000; other_p = 6476271616; ceil(other_p/cs) = 129.
  // m_lm = pages(2*512*32000*4) + 2 * pages(2*511*32000*4) + lm_p * 2 (untied head,
  //        32000 * 4096 * 2 bytes) = 125 + 2 * 125 pages + 262144000 = 658505728.
  // m_out = ceil((1 + 32) * 2 * 512 * 4096 * 2 / 2 MiB) = 132 pages = 276824064.
  const Request r = request("llama-7b", 4, 2, 512, 48 * kMiB);
  const memest_finetune_result cdp = run(r, MEMEST_FINETUNE_CDP);
  CHECK(cdp.parts.params == 39743127552.0);
  CHECK(cdp.parts.params_fp16 == 13247709184.0);
  CHECK(cdp.parts.params_fp32 == 26495418368.0);
  CHECK(cdp.parts.optimizer == 52856619008.0);
  CHECK(cdp.parts.outputs == 276824064.0);
  CHECK(cdp.parts.lm_head == 658505728.0);
  CHECK(cdp.peak_bytes == 94071947264.0);
  CHECK(run(r, MEMEST_FINETUNE_ZERO3).peak_bytes == 34557919232.0);
  CHECK(run(r, MEMEST_FINETUNE_TP).peak_bytes == 24823463936.0);
  CHECK(run(r, MEMEST_FINETUNE_DP_TP, 2).peak_bytes == 28068282368.0);
}

TEST_CASE("The chunk size is searched as a chunk manager would, and reported") {
  Request r = request("opt-1.3b", 1, 1, 512, 0);
  r.r.chunk_bytes = 0;  // search
  const memest_finetune_result out = run(r, MEMEST_FINETUNE_CDP);
  CHECK(out.chunk_elements >= 32 * kMiB);
  CHECK(out.chunk_count > 0);
  // No candidate of the search space wastes less than the one chosen.
  std::vector<double> sizes;
  {
    Request probe = r;
    probe.r.chunk_bytes = out.chunk_elements * 2;
    CHECK(run(probe, MEMEST_FINETUNE_CDP).chunk_waste_bytes == out.chunk_waste_bytes);
  }
  for (double cs = 32 * kMiB; cs <= 64 * kMiB; cs += 1024 * 257) {
    Request probe = r;
    probe.r.chunk_bytes = cs * 2;
    CHECK(run(probe, MEMEST_FINETUNE_CDP).chunk_waste_bytes >= out.chunk_waste_bytes);
  }
}

TEST_CASE("Without gradient checkpointing every layer keeps its activations") {
  Request r = request("opt-1.3b", 1, 1, 512, 40 * kMiB);
  const double with = run(r, MEMEST_FINETUNE_CDP).parts.outputs;
  r.r.gradient_checkpointing = 0;
  const double without = run(r, MEMEST_FINETUNE_CDP).parts.outputs;
  // GPT activations (Korthikanti Eq. 1, 5as/h = 5*32*512/2048 = 40): sbh(34 + 40) per layer,
  // 24 layers, plus 2 embedding outputs of 2sbh: sbh = 512 * 2048 = 1048576.
  CHECK(without == doctest::Approx(24 * 74 * 1048576.0 + 2 * 2 * 1048576.0).epsilon(0.002));
  CHECK(without > 20 * with);
}

TEST_CASE("Algorithm 1: CDP when it fits, TP when only TP fits, CPU offload when nothing fits") {
  auto select = [](const char* model, double gib) {
    Request f(model, "v100-16gb");
    f.gpu.memory_bytes = gib * 1024 * kMiB;
    f.r.gpus = 4;
    f.r.method = MEMEST_FINETUNE_AUTO;
    memest_test::Choice c;
    REQUIRE(c.run(f.r) == MEMEST_OK);
    CHECK(c.choice.option_count == 4);
    return c;
  };
  // GPT-2 (124M) fits whole on each GPU: CDP's 1.5x score wins over ZeRO-3's.
  const memest_test::Choice small = select("gpt2", 16);
  CHECK(small.choice.selected == MEMEST_FINETUNE_CDP);
  CHECK(small.options[0].max_batch > 0);
  CHECK(small.options[0].score == small.options[0].max_batch * 4 * 1.5);
  CHECK(small.choice.batch == small.options[0].max_batch);
  // BLOOM-3b on 12 GiB GPUs: neither data-parallel method nor DP+TP fits batch 1; TP does.
  const memest_test::Choice tp_only = select("bloom-3b", 12);
  CHECK(tp_only.options[0].max_batch == 0);
  CHECK(tp_only.options[1].max_batch == 0);
  CHECK(tp_only.options[3].max_batch == 0);
  CHECK(tp_only.options[2].max_batch > 0);
  CHECK(tp_only.choice.selected == MEMEST_FINETUNE_TP);
  // LLaMA-7B on 4 x V100 16GB: nothing fits: CPU offloading with batch 0.
  const memest_test::Choice none = select("llama-7b", 16);
  CHECK(none.choice.selected == MEMEST_FINETUNE_CPU_OFFLOAD);
  CHECK(none.choice.batch == 0);
  // Each max batch is the largest that fits: one more does not.
  for (const auto& o : tp_only.options) {
    if (!o.applicable || o.max_batch == 0) continue;
    CHECK(o.peak_bytes <= 12 * 1024 * kMiB);
  }
}

TEST_CASE("Algorithm 1 ties go to CDP, ADP, TP, DP+TP in that order") {
  memest::FinetuneChoice c;
  const memest_finetune_method order[4] = {MEMEST_FINETUNE_CDP, MEMEST_FINETUNE_ZERO3,
                                           MEMEST_FINETUNE_TP, MEMEST_FINETUNE_DP_TP};
  for (int i = 0; i < 4; ++i) c.options[i].method = order[i];
  c.options[1].score = 8;  c.options[1].max_batch = 2;
  c.options[2].score = 8;  c.options[2].max_batch = 8;
  c.options[3].score = 8;  c.options[3].max_batch = 4;
  memest::choose_method(c);
  CHECK(c.selected == MEMEST_FINETUNE_ZERO3);
  CHECK(c.batch == 2);
  c.options[0].score = 8;  c.options[0].max_batch = 1;
  memest::choose_method(c);
  CHECK(c.selected == MEMEST_FINETUNE_CDP);
  for (auto& o : c.options) o.score = 0;
  memest::choose_method(c);
  CHECK(c.selected == MEMEST_FINETUNE_CPU_OFFLOAD);
  CHECK(c.batch == 0);
}

TEST_CASE("--method auto decides for all nine LLMem models on 4 x V100 16GB at sequence 512") {
  for (const char* model : {"opt-1.3b", "opt-2.7b", "bloom-1b1", "bloom-3b", "biogpt-large",
                            "codegen-2b-nl", "gpt-bigcode-santacoder", "gpt-neo-1.3b", "llama-7b"}) {
    CAPTURE(model);
    const test::Answer a = test::request(test::json{
        {"mode", "finetune"}, {"model", model}, {"gpu", "v100-16gb"},
        {"parallel", {{"gpus", 4}}}, {"training", {{"seq_len", 512}}},
        {"finetune", {{"method", "auto"}}}});
    REQUIRE(a.status == MEMEST_OK);
    CHECK(a.body["methods"].size() == 4);
    const std::string selected = a.body["selected"];
    CHECK((selected == "cdp" || selected == "zero3" || selected == "tp" || selected == "dp+tp" ||
           selected == "cpu_offload"));
    if (selected != "cpu_offload") {
      CHECK(a.body["max_batch"].get<int>() > 0);
      CHECK(a.body["verdict"] == "fits");
      // Algorithm 1 fills the GPU to its largest batch: fits below the margin, else tight
      const double usage = a.body["estimate_bytes"].get<double>() / a.body["capacity_bytes"].get<double>();
      CHECK(a.body["peak_verdict"] == (usage <= MEMEST_PEAK_FITS_FRACTION ? "fits" : "tight"));
      CHECK(a.body["method"] == "auto");
      CHECK(a.body["estimate_bytes"].get<double>() <= a.body["capacity_bytes"].get<double>());
    }
  }
}

TEST_CASE("Mixture-of-experts in LLMem: every expert's tensors, the sparse block without checkpointing") {
  // Mixtral-8x7B (h 4096, 32 layers, 32 heads, 8 KV heads of 128, 8 experts of 14336, top-2,
  // vocab 32000, untied head). Per layer: q, o 4096^2 and k, v 4096 * 1024 (41943040), the
  // router 4096 * 8 (32768), 8 experts * 3 * 4096 * 14336 (1409286144), two norms (8192):
  // 1451270144. 32 layers + embedding + LM head (131072000 each) + final norm (4096):
  // 46702792704, Mistral AI's 46.7B.
  Request r = request("mixtral-8x7b", 8, 1, 512, 64 * kMiB);
  r.r.page_bytes = 1;  // no page rounding: the terms as plain products
  r.r.flash_attention = 1;
  const memest_finetune_result cdp = run(r, MEMEST_FINETUNE_CDP);
  CHECK(cdp.num_parameters == 46702792704.0);
  // m_os: momentum + variance (fp32) of every Embedding/Linear tensor, experts and router
  // included; the 65 norms (266240 parameters) and the LM head (m_lm's) are not among them:
  // (46702792704 - 266240 - 131072000) * 8.
  CHECK(cdp.parts.optimizer == 372571635712.0);
  // m_out with checkpointing is LLMem's (e_n + l_n) layer inputs: 33 * 512 * 4096 * 2.
  CHECK(cdp.parts.outputs == 33.0 * 512 * 4096 * 2);

  // Without checkpointing, per layer and token (sbh = 512 * 4096): LLMem's Llama block keeps
  // 8 (norm inputs, FFN input) + 5 (Q 2, K+V 1, attention output 2) + 8 * 3.5 (SwiGLU over
  // intermediate_size 14336) bytes per h; the MoE layer drops the dense SwiGLU share (28 h)
  // for Hugging Face's sparse block: per token the router's fp32 softmax (4 * 8) and top-k
  // indices (8 * 2); per routed row (k = 2) three int64 indices (24), the routing weight (2),
  // the sorted input and the down output (2 * 4096 * 2) and four 14336-wide tensors (gate,
  // up as one, SiLU output, product: 4 * 14336 * 2): 48 + 2 * 131098 = 262244 bytes.
  // (13 * 4096 + 262244) * 512 * 32 layers + one embedding output 512 * 4096 * 2.
  r.r.gradient_checkpointing = 0;
  const memest_finetune_result eager = run(r, MEMEST_FINETUNE_CDP);
  CHECK(eager.parts.outputs == (13.0 * 4096 + 262244) * 512 * 32 + 512 * 4096 * 2);

  // 1D TP over 8 GPUs splits every expert's 14336 columns; 6 GPUs do not divide the 32 heads.
  CHECK(run(r, MEMEST_FINETUNE_TP).tp == 8);
  Request six = r;
  six.r.gpus = 6;
  six.r.method = MEMEST_FINETUNE_TP;
  memest_finetune_result out = memest_test::sized<memest_finetune_result>();
  CHECK(memest_finetune(&six.r, &out) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error()).find("num_attention_heads") != std::string::npos);
}

TEST_CASE("LLMem on MoE: expert widths must divide under TP — MTP modules are not loaded") {
  // An expert width 1000 that 16 does not divide, with heads and intermediate_size that it does.
  Request r = request("qwen3-30b-a3b", 16, 1, 512, 64 * kMiB);
  r.model.moe_intermediate_size = 1000;
  r.r.method = MEMEST_FINETUNE_TP;
  memest_finetune_result out = memest_test::sized<memest_finetune_result>();
  CHECK(memest_finetune(&r.r, &out) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error()).find("moe_intermediate_size=1000") != std::string::npos);

  // DeepSeek-V3's checkpoint carries one MTP module that Hugging Face's DeepseekV3ForCausalLM
  // does not load: fine-tuning estimates the 671B model without it.
  Request v3 = request("deepseek-v3", 8, 1, 512, 0);
  REQUIRE(v3.model.mtp_layers == 1);
  const memest_finetune_result z3 = run(v3, MEMEST_FINETUNE_ZERO3);
  Request no_mtp = v3;
  no_mtp.model.mtp_layers = 0;
  const memest_finetune_result plain = run(no_mtp, MEMEST_FINETUNE_ZERO3);
  CHECK(z3.parts.params == plain.parts.params);
  CHECK(z3.parts.optimizer == plain.parts.optimizer);
  CHECK(z3.peak_bytes == plain.peak_bytes);
  CHECK(z3.num_parameters == doctest::Approx(671.0e9).epsilon(0.01));
}

TEST_CASE("LLMem on MoE: more than 1024 experts per layer is refused by name, not searched for seconds") {
  // Found by fuzzing: 65536 experts with biases made the chunk search pack ~400,000 tensors per
  // layer at each of its 32768 candidate sizes.
  Request r = request("qwen3-30b-a3b", 8, 1, 512, 0);
  r.model.num_experts = 1025;
  r.r.method = MEMEST_FINETUNE_ZERO3;
  memest_finetune_result out = memest_test::sized<memest_finetune_result>();
  CHECK(memest_finetune(&r.r, &out) == MEMEST_ERR_UNSUPPORTED);
  CHECK(std::string(memest_last_error_field()) == "model.num_experts");
  // 1024 with biases on every expert (a block of six tensors per expert, packed cycle by
  // cycle: benchmark BM_FinetuneChunkSearchBiasedExperts) answers
  r.model.num_experts = 1024;
  r.model.mlp_bias = 1;
  CHECK(memest_finetune(&r.r, &out) == MEMEST_OK);
  // Found by fuzzing: 66,047 DeepSeek-V3 layers listed 51 million expert tensors. At most 2^20
  // experts in all: Qwen3-30B-A3B (every layer MoE) with 1024 experts answers up to 1024 layers
  r.model.mlp_bias = 0;
  r.model.num_hidden_layers = 1024;
  r.r.chunk_bytes = 4e9;  // (a given chunk size: no search)
  CHECK(memest_finetune(&r.r, &out) == MEMEST_OK);
  r.model.num_hidden_layers = 1025;
  CHECK(memest_finetune(&r.r, &out) == MEMEST_ERR_UNSUPPORTED);
  CHECK(std::string(memest_last_error_field()) == "model.num_hidden_layers");
  CHECK(std::string(memest_last_error()).find("1049600 experts in all") != std::string::npos);
}

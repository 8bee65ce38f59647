// Renders memest's JSON responses for people (table) and spreadsheets (CSV).
// Only presentation lives here: every number comes from the library's response.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace memest_cli {

using ojson = nlohmann::ordered_json;

std::string pretrain_table(const ojson& response);
std::string pretrain_csv(const ojson& response);
std::string model_states_table(const ojson& response);
std::string model_states_csv(const ojson& response);

// The search table: by default the columns that fit 100 characters (layout, peak, fits/oom,
// TFLOP/s per GPU, step time; "=" after the rank of entries tied with the best); `wide` adds dp,
// ep, the estimate, tokens/s, the bubble, MFU, the step breakdown and the reason.
std::string search_table(const ojson& response, bool wide = false);
std::string search_csv(const ojson& response);
// `requested_gpus`: the request's GPU count, said when the answer has no layout (Algorithm 1
// selected CPU offloading); 0 leaves the count out.
std::string finetune_table(const ojson& response, int64_t requested_gpus = 0);
std::string finetune_csv(const ojson& response);

// Lists of presets: `rows` is an array of flat objects; columns are taken from the first.
std::string list_table(const ojson& rows);
std::string list_csv(const ojson& rows);

// "27.20 GiB"
std::string gib(double bytes);

}  // namespace memest_cli

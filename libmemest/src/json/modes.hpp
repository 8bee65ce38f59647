// Pieces of the JSON contract shared by the modes (json/*_json.cpp) and json/request.cpp,
// which dispatches on "mode". Internal to the library.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/json_fields.hpp"
#include "memest/memest.h"

namespace memest {

// Responses keep their fields in the order written ("ok" first), for people reading them.
using ojson = nlohmann::ordered_json;

// ---- reading requests
double dtype_bytes(const JsonFields& f, const char* key, double fallback);
void read_precision(const JsonFields& f, double& param, double& grad, double& optimizer);
const json& require_object_field(const JsonFields& f, const char* key);
json empty_object();
int32_t recompute_value(const std::string& name);

// ---- writing responses
const char* family_name(int32_t family);
const char* recompute_name(int32_t recompute);
ojson model_json(const memest_model& m);
ojson gpu_json(const memest_gpu& g);

// ---- one function per mode: the request's fields in, the response document out
ojson pretrain_mode(const JsonFields& top);
ojson model_states_mode(const JsonFields& top);
ojson finetune_mode(const JsonFields& top);
ojson search_mode(const JsonFields& top);

}  // namespace memest

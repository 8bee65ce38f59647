// Helpers the mappers share: read a key into a request field (or the framework's default),
// refuse a bad value naming the file, line and key, and list what was never read.
#pragma once

#include <string>
#include <utility>

#include "core/error.hpp"
#include "launch/import.hpp"

namespace memest::launch {

// Keys of `settings` never read and not under an ignored prefix become warnings: a setting
// memest does not know might change memory, so it is said, never dropped silently.
inline void warn_unread_options(RequestBuilder& b, const Settings& settings,
                                const char* const* ignored, std::size_t count) {
  for (const std::string& key : settings.unread()) {
    bool skip = false;
    for (std::size_t i = 0; i < count && !skip; ++i) skip = key.rfind(ignored[i], 0) == 0;
    if (skip) continue;
    const Setting* s = settings.peek(key);
    b.warn(*s, "not read: memest does not model this setting (check that it does not change "
               "memory)");
  }
}

// transformers' OptimizerNames (src/transformers/training_args.py), which axolotl and
// LLaMA-Factory also take, as memest's optimizers; "" for one memest does not model.
inline std::string hf_optimizer(const std::string& name) {
  static constexpr std::pair<const char*, const char*> kOptim[] = {
      {"adamw_torch", "adamw_foreach"},         {"adamw_hf", "adamw_foreach"},
      {"adamw_torch_fused", "adamw"},           {"adamw_apex_fused", "adamw"},
      {"adamw_bnb_8bit", "adamw_8bit"},         {"adamw_8bit", "adamw_8bit"},
      {"adamw_torch_8bit", "adamw_8bit"},       {"paged_adamw_8bit", "paged_adamw_8bit"},
      {"paged_adamw_32bit", "paged_adamw_32bit"}, {"sgd", "sgd"}};
  for (const auto& [n, m] : kOptim) {
    if (name == n) return m;
  }
  return "";
}

// Reads keys of one framework's file with that framework's defaults.
struct Reader {
  const Settings& s;
  RequestBuilder& b;
  std::string framework;
  std::string defined_in;  // the framework file that defines the defaults

  [[noreturn]] void bad(const Setting& at, const std::string& expected) const {
    throw Error(MEMEST_ERR_INVALID_ARGUMENT, at.file + ":" + at.key,
                where(at) + ": must be " + expected + ", got " + echo(at.value.dump()));
  }

  // key -> field as an integer; absent: the default (set unless set_default is false).
  int64_t integer(const char* key, const char* field, int64_t fallback, bool set_default = true) const {
    if (const Setting* v = s.take(key)) {
      const int64_t x = integer_of(*v);
      if (field) b.from_file(field, x, *v);
      return x;
    }
    if (field && set_default) {
      b.from_default(field, fallback, framework, std::string(key) + " = " + std::to_string(fallback),
                     defined_in);
    }
    return fallback;
  }

  void warn_unread(const char* const* ignored, std::size_t count) const {
    warn_unread_options(b, s, ignored, count);
  }
};

}  // namespace memest::launch

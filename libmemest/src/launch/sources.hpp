// Launch files read into flat settings: every value with the file and line it came from.
// TOML (torchtitan) through toml++, YAML and JSON (torchtune, axolotl, LLaMA-Factory,
// accelerate, DeepSpeed, Megatron argument files) through yaml-cpp, and shell launch scripts
// (torchrun / deepspeed / accelerate launch command lines) through a small reader of the
// shell subset such scripts use: variables, ${VAR:-default}, bash arrays, line continuations.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace memest::launch {

using json = nlohmann::json;

struct LaunchFile {
  std::string name;  // as the user gave it (a path or a bare name); used in origins
  std::string text;
};

// One value read from a file: a scalar (string, number, bool, null) or a list of scalars.
struct Setting {
  json value;
  std::string file;
  int32_t line = 0;  // 1-based; 0 when the format gives none
  std::string key;   // as written in the file ("parallelism.tensor_parallel_degree", "--tp")
};

// A document's settings by key. Nested tables and mappings read as dotted keys
// ("training.local_batch_size"); list items of mappings as "key.N.field".
class Settings {
 public:
  void put(const std::string& key, Setting s) { values_[key] = std::move(s); }
  // The setting, marked as read (what is never read becomes a warning or is ignored).
  const Setting* take(const std::string& key) const;
  const Setting* peek(const std::string& key) const;
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  std::vector<std::string> unread() const;
  const std::map<std::string, Setting>& all() const { return values_; }
  bool empty() const { return values_.empty(); }

 private:
  std::map<std::string, Setting> values_;
  mutable std::map<std::string, bool> read_;
};

// Limits on what a launch file may be: bigger or deeper input is refused before parsing
// (the parsers recurse per nesting level).
constexpr std::size_t kMaxLaunchFileBytes = 1u << 20;  // 1 MiB: real launch files are < 20 kB
constexpr int kMaxLaunchNesting = 32;                  // real files nest < 8 levels
constexpr std::size_t kMaxLaunchFiles = 8;             // one run: a config and its helpers

// Checks a file before any parser sees it: size, NUL bytes (binary), nesting depth.
// `field` names the file in errors ("files[0]").
void check_launch_text(const LaunchFile& f, const std::string& field);

Settings read_toml(const LaunchFile& f, const std::string& field);
Settings read_yaml(const LaunchFile& f, const std::string& field);  // also JSON

// A command found in a shell script: the launcher (torchrun, deepspeed, accelerate,
// python), its own options, the script it runs and that script's options.
struct ShellCommand {
  std::string launcher;  // "torchrun", "python", "deepspeed", "accelerate launch", ...
  std::string script;    // "pretrain_gpt.py", "train.py", "-m axolotl.cli.train", ...
  Settings launcher_options;
  Settings options;  // "--micro-batch-size" -> "4"; a flag without a value -> true
  int32_t line = 0;
};

// The training command of a shell launch script, with variables expanded and if/elif/else
// branches followed where their conditions are known. When the script holds several (one
// per $1 value), the one whose options name a file in `prefer` (--deepspeed ds.json), else
// the last. Refused when there is none.
ShellCommand read_shell(const LaunchFile& f, const std::string& field,
                        const std::vector<std::string>& prefer = {});

// Does the text look like a shell script (a shebang, or a launcher command)?
bool looks_like_shell(const std::string& text);

// A setting's value as a number / integer / boolean / string, naming the file and key when it
// is not one. Strings such as "8" read as numbers (shell flags and YAML both give them).
double number_of(const Setting& s);
int64_t integer_of(const Setting& s);
bool boolean_of(const Setting& s);
std::string string_of(const Setting& s);
// "file:line key" for messages.
std::string where(const Setting& s);

}  // namespace memest::launch

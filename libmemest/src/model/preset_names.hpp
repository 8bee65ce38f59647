// Presets by the names checkpoints go by: a Hugging Face id ("meta-llama/Llama-3.1-8B-Instruct"),
// a checkpoint directory's name, or a release whose shapes equal a preset's under another name
// (the aliases). Used by the model field's preset lookup and by the launch-file readers.
#pragma once

#include <optional>
#include <string>

namespace memest {

struct PresetName {
  std::string id;    // the preset
  std::string note;  // "" for the preset's own checkpoint, else what the alias shares with it
};

// The preset of a checkpoint name: the last path component, lower-cased, without a "meta-"
// prefix and without the suffixes of releases that keep the shapes (-instruct, -hf, -fp8, ...).
// nullopt when no preset or alias has that name.
std::optional<PresetName> preset_by_checkpoint_name(const std::string& name);

// The name with ASCII letters lower-cased (the comparisons of names above and of launch files').
std::string ascii_lower(std::string s);

}  // namespace memest

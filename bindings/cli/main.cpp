// memest — command-line front end of libmemest.
//
// Every subcommand builds the JSON request that memest_request_json takes (mode, model, gpu,
// parallel, training and the mode's own section), hands it to the C API, and prints the
// response; no formula lives here, and every field is checked by the library.
// Exit codes: 0 success (and --help, --version); 2 bad input, with one line on stderr naming
// the flag or the request field and nothing on stdout; 1 internal error.
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "memest/memest.h"

namespace {

using namespace memest_cli;

int input_error(const std::string& message) {
  std::cerr << "memest: error: " << message << "\n";
  return kExitBadInput;
}

// CLI11 would report a mistyped subcommand as "A subcommand is required": name it instead.
bool names_unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->check_name(argv[1])) return false;
  }
  return true;
}

// CLI11's message for a parse error, as one line; "A excludes B" reads "A and B cannot be used
// together" (--gpu-profile with --gpu, --config with --model, ...).
std::string parse_error_message(const CLI::Error& e) {
  std::string what = e.what();
  const std::string excludes = " excludes ";
  if (const auto pos = what.find(excludes);
      dynamic_cast<const CLI::ExcludesError*>(&e) && pos != std::string::npos) {
    what = what.substr(0, pos) + " and " + what.substr(pos + excludes.size()) + " cannot be used together";
  }
  return what;
}

// Parses the command line. Help and version are printed here (exit 0); a parse error is
// printed as one line (exit 2, whatever CLI11's own code for it). Returns -1 to go on.
int parse(CLI::App& app, int argc, char** argv) {
  if (names_unknown_subcommand(app, argc, argv)) {
    return input_error(std::string("unknown subcommand \"") + argv[1] +
                       "\" (pretrain, finetune, search, model-states, request, import, models, gpus; "
                       "see memest --help)");
  }
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "memest: error: " + parse_error_message(e) + "\n";
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "memest: will this LLM training run fit in GPU memory, and where does the memory go?\n"
      "Formulas: 4D parallelism memory estimator (Llama), Korthikanti et al. (GPT), ZeRO."};
  app.set_version_flag("--version", std::string("memest ") + memest_version_string());
  app.require_subcommand(1);
  const std::vector<Command> commands = {add_pretrain(app), add_model_states(app), add_finetune(app),
                                         add_search(app),   add_request(app),      add_import(app),
                                         add_models(app),   add_gpus(app),
                                         add_recipes(app)};
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;

  try {
    for (const Command& c : commands) {
      if (c.cmd->parsed()) return c.run();
    }
    return input_error("no subcommand (see memest --help)");
  } catch (const InputError& e) {
    return input_error(e.what());
  } catch (const std::exception& e) {
    std::cerr << "memest: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

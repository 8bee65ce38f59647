#include <iostream>

#include "commands.hpp"
#include "memest/memest.h"

namespace memest_cli {

namespace {

int exit_code_for(memest_status status) {
  if (status == MEMEST_OK) return kExitOk;
  return status == MEMEST_ERR_INTERNAL || status == MEMEST_ERR_NO_MEMORY ? kExitInternal
                                                                         : kExitBadInput;
}

}  // namespace

int ask_library(const std::string& request, ojson& response, bool error_document) {
  char* text = nullptr;
  const memest_status status = memest_request_json(request.c_str(), &text);
  if (!text) {
    std::cerr << "memest: error: " << memest_last_error() << "\n";
    return exit_code_for(status);
  }
  const std::string body(text);
  memest_string_free(text);
  if (status != MEMEST_OK) {
    if (error_document) std::cout << body << "\n";
    std::cerr << "memest: error: " << memest_last_error() << "\n";
    return exit_code_for(status);
  }
  response = ojson::parse(body);
  return kExitOk;
}

void print_response(const ojson& response, const Output& output, int64_t requested_gpus) {
  const std::string mode = response["mode"].get<std::string>();
  const bool csv = output.format == "csv";
  if (output.format == "json") {
    std::cout << response.dump(2) << "\n";
  } else if (mode == "search") {
    std::cout << (csv ? search_csv(response) : search_table(response, output.wide));
    if (!csv && response.contains("launch")) {
      std::cout << "\nthe best layout as " << response["launch"]["format"].get<std::string>()
                << " settings:\n" << response["launch"]["text"].get<std::string>();
    }
  } else if (mode == "finetune") {
    std::cout << (csv ? finetune_csv(response) : finetune_table(response, requested_gpus));
  } else if (mode == "pretrain") {
    std::cout << (csv ? pretrain_csv(response) : pretrain_table(response));
  } else {
    std::cout << (csv ? model_states_csv(response) : model_states_table(response));
  }
}

int answer(const std::string& request, const Output& output, bool error_document) {
  ojson response;
  if (int rc = ask_library(request, response, error_document); rc != kExitOk) return rc;
  // the request's GPU count, for an answer that does not repeat it (the library read the
  // request, so it parses; anything else leaves the count unknown)
  const ojson sent = ojson::parse(request, nullptr, false);
  int64_t gpus = 0;
  if (sent.is_object() && sent.contains("parallel") && sent["parallel"].is_object() &&
      sent["parallel"].contains("gpus") && sent["parallel"]["gpus"].is_number_integer()) {
    gpus = sent["parallel"]["gpus"].get<int64_t>();
  }
  print_response(response, output, gpus);
  return kExitOk;
}

}  // namespace memest_cli

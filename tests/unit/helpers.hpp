// Shared test helpers: read test data, call the JSON entry point.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "memest/memest.h"

namespace test {

using json = nlohmann::json;

inline json load_json(const std::string& name) {
  std::ifstream in(std::string(MEMEST_TEST_DATA) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

struct Answer {
  memest_status status;
  json body;
};

// memest_request_json, with the response parsed and the string freed.
inline Answer request(const std::string& text) {
  char* out = nullptr;
  const memest_status status = memest_request_json(text.c_str(), &out);
  Answer a{status, out ? json::parse(out) : json()};
  memest_string_free(out);
  return a;
}
inline Answer request(const json& j) { return request(j.dump()); }

// The answer to a request that must succeed (the test stops, showing the answer, if not).
inline json ok(const json& req) {
  const Answer a = request(req);
  INFO(a.body.dump());
  REQUIRE(a.status == MEMEST_OK);
  return a.body;
}

// The field a request that must be refused is refused on.
inline std::string refused_field(const json& req) {
  const Answer a = request(req);
  INFO(a.body.dump());
  REQUIRE(a.status != MEMEST_OK);
  return a.body["error"]["field"].get<std::string>();
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace test

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

// A JSON text with Python's bare Infinity, -Infinity and NaN outside strings written as null
// (for the tests' own parser; the library reads them itself).
inline std::string without_non_finite(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '"') {
      std::size_t j = i + 1;
      while (j < text.size() && text[j] != '"') j += text[j] == '\\' ? 2 : 1;
      out.append(text, i, j + 1 - i);
      i = j + 1;
      continue;
    }
    bool replaced = false;
    for (const char* t : {"-Infinity", "Infinity", "NaN"}) {
      const std::size_t n = std::char_traits<char>::length(t);
      if (text.compare(i, n, t) == 0) {
        out += "null";
        i += n;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

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

// Recorded fixtures (tests/fixtures/) and shipped examples (examples/) for the doctest suite.
#pragma once

#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

inline std::string fixture_path(const std::string& name) {
  return std::string(CALIBRATE_FIXTURES) + "/" + name;
}

inline std::string example_path(const std::string& name) {
  return std::string(CALIBRATE_EXAMPLES) + "/" + name;
}

inline nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return nlohmann::json::parse(in);
}

inline nlohmann::json load_fixture(const std::string& name) { return load_json(fixture_path(name)); }

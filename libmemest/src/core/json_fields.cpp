#include "core/json_fields.hpp"

#include <string>
#include <vector>

namespace memest {

namespace {

const char* type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float:
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "a number";
    default: return "an unsupported value";
  }
}

std::string format_int(int64_t v) { return std::to_string(v); }

}  // namespace

json parse_document(const std::string& text, const char* what) {
  // Keys seen in each open object, innermost last.
  std::vector<std::vector<std::string>> open_objects;
  auto check = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: open_objects.emplace_back(); break;
      case json::parse_event_t::object_end: open_objects.pop_back(); break;
      case json::parse_event_t::key: {
        const std::string key = parsed.get<std::string>();
        std::vector<std::string>& seen = open_objects.back();
        for (const std::string& k : seen) {
          if (k == key) {
            throw Error(MEMEST_ERR_PARSE, "", std::string(what) + " is not valid JSON: duplicate key \"" +
                                                  echo(key) + "\"");
          }
        }
        seen.push_back(key);
        break;
      }
      default: break;
    }
    return true;
  };
  try {
    return json::parse(text, check);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw Error(MEMEST_ERR_PARSE, "", std::string(what) + " is not valid JSON: " + echo(e.what(), 300));
  }
}

JsonFields::JsonFields(const json& object, std::string path, Nulls nulls)
    : object_(object), path_(std::move(path)), nulls_(nulls) {
  if (!object_.is_object()) {
    throw Error(MEMEST_ERR_TYPE, path_,
                (path_.empty() ? std::string("request") : path_) + ": expected an object, got " +
                    type_name(object_));
  }
}

std::string JsonFields::path_of(const char* key) const {
  return path_.empty() ? std::string(key) : path_ + "." + key;
}

bool JsonFields::has(const char* key) const {
  auto it = object_.find(key);
  if (it == object_.end()) return false;
  if (it->is_null() && nulls_ == Nulls::Refused) {
    throw Error(MEMEST_ERR_TYPE, path_of(key),
                path_of(key) + ": null is not a value (leave the field out for its default)");
  }
  return !it->is_null();
}

std::optional<int64_t> JsonFields::integer(const char* key, int64_t min, int64_t max) const {
  if (!has(key)) return std::nullopt;
  const json& v = object_.at(key);
  const std::string field = path_of(key);
  if (!v.is_number()) {
    throw Error(MEMEST_ERR_TYPE, field, field + ": expected an integer, got " + type_name(v));
  }
  int64_t result = 0;
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) {
      fail(field, "must be at most " + format_int(max) + ", got " + std::to_string(u));
    }
    result = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    result = v.get<int64_t>();
  } else {
    double d = v.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d) {
      throw Error(MEMEST_ERR_TYPE, field, field + ": expected an integer, got " + v.dump());
    }
    if (d > static_cast<double>(max) || d < static_cast<double>(min)) {
      fail(field, "must be between " + format_int(min) + " and " + format_int(max) + ", got " +
                      v.dump());
    }
    result = static_cast<int64_t>(d);
  }
  if (result < min || result > max) {
    fail(field, "must be between " + format_int(min) + " and " + format_int(max) + ", got " +
                    format_int(result));
  }
  return result;
}

int64_t JsonFields::integer_or(const char* key, int64_t fallback, int64_t min, int64_t max) const {
  return integer(key, min, max).value_or(fallback);
}

int64_t JsonFields::required_integer(const char* key, int64_t min, int64_t max) const {
  auto v = integer(key, min, max);
  if (!v) throw Error(MEMEST_ERR_MISSING_FIELD, path_of(key), path_of(key) + ": missing");
  return *v;
}

std::optional<double> JsonFields::number(const char* key, double min, double max) const {
  if (!has(key)) return std::nullopt;
  const json& v = object_.at(key);
  const std::string field = path_of(key);
  if (!v.is_number()) {
    throw Error(MEMEST_ERR_TYPE, field, field + ": expected a number, got " + type_name(v));
  }
  double d = v.get<double>();
  if (!std::isfinite(d) || d < min || d > max) {
    fail(field, "must be between " + json(min).dump() + " and " + json(max).dump() + ", got " +
                    v.dump());
  }
  return d;
}

std::optional<bool> JsonFields::boolean(const char* key) const {
  if (!has(key)) return std::nullopt;
  const json& v = object_.at(key);
  if (!v.is_boolean()) {
    const std::string field = path_of(key);
    throw Error(MEMEST_ERR_TYPE, field, field + ": expected true or false, got " + type_name(v));
  }
  return v.get<bool>();
}

std::optional<std::string> JsonFields::string(const char* key) const {
  if (!has(key)) return std::nullopt;
  const json& v = object_.at(key);
  if (!v.is_string()) {
    const std::string field = path_of(key);
    throw Error(MEMEST_ERR_TYPE, field, field + ": expected a string, got " + type_name(v));
  }
  return v.get<std::string>();
}

std::optional<std::string> JsonFields::choice(const char* key,
                                              std::initializer_list<const char*> choices) const {
  auto s = string(key);
  if (!s) return s;
  std::string listed;
  for (const char* c : choices) {
    if (*s == c) return s;
    listed += listed.empty() ? "" : ", ";
    listed += c;
  }
  fail(path_of(key), "must be one of " + listed + ", got \"" + echo(*s) + "\"");
}

const json* JsonFields::object(const char* key) const {
  if (!has(key)) return nullptr;
  return &object_.at(key);
}

void JsonFields::reject_unknown(std::initializer_list<const char*> allowed) const {
  reject_unknown(allowed.begin(), allowed.size());
}

void JsonFields::reject_unknown(const char* const* allowed, std::size_t count) const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    bool known = false;
    for (std::size_t i = 0; i < count; ++i) known = known || it.key() == allowed[i];
    if (!known) {
      std::string listed;
      for (std::size_t i = 0; i < count; ++i) listed += (i ? ", " : "") + std::string(allowed[i]);
      const std::string field = path_of(echo(it.key()).c_str());
      throw Error(MEMEST_ERR_UNKNOWN_FIELD, field,
                  field + ": unknown field (known: " + listed + ")");
    }
  }
}

const char* JsonFields::first_present(std::initializer_list<const char*> keys) const {
  for (const char* k : keys)
    if (has(k)) return k;
  return nullptr;
}

}  // namespace memest

#include "core/json_fields.hpp"

#include <cstring>
#include <limits>
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

std::string non_finite_name(double d) {
  return std::isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity";
}

// Python's json module writes the non-finite floats as bare tokens (Infinity, -Infinity, NaN),
// which JSON does not allow and nlohmann::json refuses; Hugging Face config files carry them
// (Nemotron-H's time_step_limit). Before parsing, each such token outside a string is replaced
// by a string literal of the same length (so parse errors keep their byte positions), and its
// place among the document's string values is recorded; the parser's callback then puts the
// number back. A string that merely says "NaN" is not touched.
struct NonFinite {
  std::size_t ordinal;  // among the string values (not keys) of the document, in order
  double value;
};

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '+' || c == '-';
}

// Returns the text to parse: `text` itself when it has no such token, else a copy with them
// replaced; `found` lists them.
std::string replace_non_finite(const std::string& text, std::vector<NonFinite>& found) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const struct {
    const char* token;
    const char* stand_in;  // a string literal of the same length
    double value;
  } kTokens[] = {{"-Infinity", "\"-Infini\"", -kInf},
                 {"Infinity", "\"Infini\"", kInf},
                 {"NaN", "\"N\"", std::numeric_limits<double>::quiet_NaN()}};
  std::string out;
  std::size_t strings = 0;  // string values seen so far
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const char c = text[i];
    if (c == '"') {  // a string: skip to its closing quote, escapes respected
      std::size_t j = i + 1;
      while (j < n && text[j] != '"') j += text[j] == '\\' ? 2 : 1;
      // A key is followed by ':' (after whitespace); anything else is a value.
      std::size_t k = j + 1;
      while (k < n && (text[k] == ' ' || text[k] == '\t' || text[k] == '\n' || text[k] == '\r')) ++k;
      if (k >= n || text[k] != ':') ++strings;
      i = j + 1;
      continue;
    }
    bool replaced = false;
    if (i == 0 || !is_word_char(text[i - 1])) {
      for (const auto& t : kTokens) {
        const std::size_t len = std::strlen(t.token);
        if (text.compare(i, len, t.token) != 0) continue;
        if (i + len < n && is_word_char(text[i + len])) continue;  // "NaNx", "Infinity1": not ours
        if (out.empty()) out = text;
        out.replace(i, len, t.stand_in, len);  // same length: later offsets stay valid
        found.push_back({strings++, t.value});
        i += len;
        replaced = true;
        break;
      }
    }
    if (!replaced) ++i;
  }
  return found.empty() ? text : out;
}

}  // namespace

json parse_document(const std::string& text, const char* what) {
  // Keys seen in each open object, innermost last.
  std::vector<std::vector<std::string>> open_objects;
  std::vector<NonFinite> non_finite;
  const std::string parsed_text = replace_non_finite(text, non_finite);
  std::size_t strings = 0, next = 0;  // string values seen; next entry of non_finite
  auto check = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::value:
        if (parsed.is_string()) {
          if (next < non_finite.size() && non_finite[next].ordinal == strings) {
            parsed = non_finite[next++].value;
          }
          ++strings;
        }
        break;
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
    return json::parse(parsed_text, check);
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
    if (!std::isfinite(d)) {
      throw Error(MEMEST_ERR_TYPE, field, field + ": is not finite (" + non_finite_name(d) +
                                              "), expected an integer");
    }
    if (std::floor(d) != d) {
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
  if (!std::isfinite(d)) {
    fail(field, "is not finite (" + non_finite_name(d) + "), expected a number between " +
                    json(min).dump() + " and " + json(max).dump());
  }
  if (d < min || d > max) {
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

#include "launch/sources.hpp"

#include <cmath>

#include <yaml-cpp/yaml.h>

// toml++ header-only (Debian's libtomlplusplus-dev ships the headers; no library to link)
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 1
#include <toml++/toml.h>

#include "core/error.hpp"

namespace memest::launch {

const Setting* Settings::take(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return nullptr;
  read_[key] = true;
  return &it->second;
}

const Setting* Settings::peek(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

std::vector<std::string> Settings::unread() const {
  std::vector<std::string> keys;
  for (const auto& [key, s] : values_) {
    if (!read_.count(key)) keys.push_back(key);
  }
  return keys;
}

std::string where(const Setting& s) {
  std::string w = s.file;
  if (s.line > 0) w += " line " + std::to_string(s.line);
  return w + ", " + s.key;
}

namespace {

[[noreturn]] void bad_value(const Setting& s, const std::string& expected) {
  const std::string got = s.value.is_string() ? "\"" + echo(s.value.get<std::string>()) + "\""
                                              : echo(s.value.dump());
  throw Error(MEMEST_ERR_INVALID_ARGUMENT, s.file + ":" + s.key,
              where(s) + ": must be " + expected + ", got " + got);
}

// A string as a number: the whole string, finite ("8", "1e-4"; not "8x", "inf").
std::optional<double> parse_number(const std::string& text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

double number_of(const Setting& s) {
  if (s.value.is_number()) {
    const double v = s.value.get<double>();
    if (std::isfinite(v)) return v;
  } else if (s.value.is_string()) {
    if (auto v = parse_number(s.value.get<std::string>())) return *v;
  }
  bad_value(s, "a finite number");
}

int64_t integer_of(const Setting& s) {
  const double v = number_of(s);
  if (v != std::floor(v) || std::fabs(v) > 9.0e15) bad_value(s, "an integer");
  return static_cast<int64_t>(v);
}

bool boolean_of(const Setting& s) {
  if (s.value.is_boolean()) return s.value.get<bool>();
  if (s.value.is_string()) {
    std::string t = s.value.get<std::string>();
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (t == "true" || t == "1" || t == "yes" || t == "on") return true;
    if (t == "false" || t == "0" || t == "no" || t == "off") return false;
  }
  if (s.value.is_number_integer()) {
    const auto v = s.value.get<int64_t>();
    if (v == 0 || v == 1) return v == 1;
  }
  bad_value(s, "true or false");
}

std::string string_of(const Setting& s) {
  if (s.value.is_string()) return s.value.get<std::string>();
  if (s.value.is_number() || s.value.is_boolean()) return s.value.dump();
  bad_value(s, "a string");
}

void check_launch_text(const LaunchFile& f, const std::string& field) {
  if (f.text.size() > kMaxLaunchFileBytes) {
    fail(field, f.name + " is " + std::to_string(f.text.size()) + " bytes, more than a launch file's " +
                    std::to_string(kMaxLaunchFileBytes) + " (is it the right file?)");
  }
  if (f.text.find('\0') != std::string::npos) {
    throw Error(MEMEST_ERR_PARSE, field, field + ": " + f.name + " is binary (it holds NUL bytes), not a launch file");
  }
  // Nesting: brackets of flow collections (YAML, JSON, TOML inline tables and arrays) and
  // the indentation of block YAML. A bound here keeps the recursive parsers shallow.
  int depth = 0, deepest = 0, line = 1, deepest_line = 1;
  for (char c : f.text) {
    if (c == '\n') ++line;
    if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth, deepest_line = line;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  if (deepest > kMaxLaunchNesting) {
    throw Error(MEMEST_ERR_PARSE, field,
                field + ": " + f.name + " line " + std::to_string(deepest_line) + " nests " +
                    std::to_string(deepest) + " brackets deep, more than " +
                    std::to_string(kMaxLaunchNesting) + ": not a launch file");
  }
}

// ---------------------------------------------------------------- TOML (toml++)

namespace {

json toml_scalar(const toml::node& n, bool& ok) {
  ok = true;
  if (auto v = n.as_string()) return v->get();
  if (auto v = n.as_integer()) return v->get();
  if (auto v = n.as_floating_point()) {
    const double d = v->get();
    if (!std::isfinite(d)) return json(std::string(d > 0 ? "inf" : d < 0 ? "-inf" : "nan"));
    return d;
  }
  if (auto v = n.as_boolean()) return v->get();
  if (n.is_date() || n.is_time() || n.is_date_time()) return "(a date or time)";
  ok = false;
  return nullptr;
}

void flatten_toml(const toml::table& t, const std::string& prefix, const std::string& file,
                  Settings& out) {
  for (const auto& [k, node] : t) {
    const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    const int32_t line = static_cast<int32_t>(node.source().begin.line);
    if (const toml::table* sub = node.as_table()) {
      flatten_toml(*sub, key, file, out);
    } else if (const toml::array* a = node.as_array()) {
      json list = json::array();
      bool scalars = true;
      for (const toml::node& item : *a) {
        bool ok = false;
        json v = toml_scalar(item, ok);
        if (!ok) {
          scalars = false;
          break;
        }
        list.push_back(std::move(v));
      }
      if (scalars) {
        out.put(key, Setting{list, file, line, key});
      } else {
        std::size_t i = 0;
        for (const toml::node& item : *a) {
          const std::string ik = key + "." + std::to_string(i++);
          if (const toml::table* st = item.as_table()) {
            flatten_toml(*st, ik, file, out);
          } else {
            bool ok = false;
            json v = toml_scalar(item, ok);
            out.put(ik, Setting{ok ? v : json(nullptr), file, line, ik});
          }
        }
      }
    } else {
      bool ok = false;
      json v = toml_scalar(node, ok);
      out.put(key, Setting{v, file, line, key});
    }
  }
}

}  // namespace

Settings read_toml(const LaunchFile& f, const std::string& field) {
  check_launch_text(f, field);
  // toml++ 3.3 (Debian bookworm) reaches __builtin_unreachable for some non-ASCII code points
  // in its whitespace test (unicode_autogenerated.h is_non_ascii_horizontal_whitespace, e.g.
  // U+00A1; found by the launch fuzzer). TOML allows non-ASCII only inside strings and
  // comments, and no setting memest reads is non-ASCII, so such bytes are read as '?'.
  std::string ascii = f.text;
  for (char& c : ascii) {
    if (static_cast<unsigned char>(c) >= 0x80) c = '?';
  }
  toml::table table;
  try {
    table = toml::parse(ascii, f.name);
  } catch (const toml::parse_error& e) {
    throw Error(MEMEST_ERR_PARSE, field,
                field + ": " + f.name + " line " + std::to_string(e.source().begin.line) +
                    " is not valid TOML: " + std::string(e.description()));
  }
  Settings out;
  flatten_toml(table, "", f.name, out);
  return out;
}

// ---------------------------------------------------------------- YAML and JSON (yaml-cpp)

namespace {

// Nodes visited while flattening: aliases can make a small file name a huge tree.
constexpr std::size_t kMaxYamlNodes = 100000;

json yaml_scalar(const YAML::Node& n) {
  const std::string& text = n.Scalar();
  // A quoted scalar is a string; a plain one may be a number, a bool or null (YAML 1.2 core
  // schema, and 1.1's yes/no that configs written for PyYAML use).
  if (n.Tag() == "!") return text;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return nullptr;
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (auto v = parse_number(text)) {
    const bool integral = text.find_first_of(".eEnN") == std::string::npos;
    if (integral && std::fabs(*v) < 9.0e15) return static_cast<int64_t>(*v);
    return *v;
  }
  return text;
}

void flatten_yaml(const YAML::Node& node, const std::string& key, const std::string& file,
                  Settings& out, std::size_t& visited, int depth, const std::string& field) {
  if (++visited > kMaxYamlNodes || depth > kMaxLaunchNesting) {
    throw Error(MEMEST_ERR_PARSE, field,
                field + ": " + file + " has more than " + std::to_string(kMaxYamlNodes) +
                    " values or nests deeper than " + std::to_string(kMaxLaunchNesting) +
                    " levels (aliases?): not a launch file");
  }
  const int32_t line = node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
  switch (node.Type()) {
    case YAML::NodeType::Map:
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          throw Error(MEMEST_ERR_PARSE, field,
                      field + ": " + file + " line " + std::to_string(kv.first.Mark().line + 1) +
                          ": a key must be a plain name");
        }
        const std::string k = kv.first.Scalar();
        flatten_yaml(kv.second, key.empty() ? k : key + "." + k, file, out, visited, depth + 1, field);
      }
      return;
    case YAML::NodeType::Sequence: {
      bool scalars = true;
      for (const auto& item : node) scalars = scalars && (item.IsScalar() || item.IsNull());
      if (scalars) {
        json list = json::array();
        for (const auto& item : node) {
          ++visited;
          list.push_back(item.IsNull() ? json(nullptr) : yaml_scalar(item));
        }
        out.put(key, Setting{list, file, line, key});
        return;
      }
      std::size_t i = 0;
      for (const auto& item : node) {
        flatten_yaml(item, key + "." + std::to_string(i++), file, out, visited, depth + 1, field);
      }
      return;
    }
    case YAML::NodeType::Scalar:
      out.put(key, Setting{yaml_scalar(node), file, line, key});
      return;
    default:
      if (!key.empty()) out.put(key, Setting{nullptr, file, line, key});
      return;
  }
}

}  // namespace

Settings read_yaml(const LaunchFile& f, const std::string& field) {
  check_launch_text(f, field);
  YAML::Node root;
  try {
    root = YAML::Load(f.text);
  } catch (const YAML::Exception& e) {
    throw Error(MEMEST_ERR_PARSE, field,
                field + ": " + f.name + " line " + std::to_string(e.mark.line + 1) +
                    " is not valid YAML or JSON: " + e.msg);
  }
  if (!root.IsMap()) {
    throw Error(MEMEST_ERR_TYPE, field,
                field + ": " + f.name + " is not a mapping of settings (its top level is " +
                    (root.IsSequence() ? "a list" : root.IsScalar() ? "a single value" : "empty") + ")");
  }
  Settings out;
  std::size_t visited = 0;
  try {
    flatten_yaml(root, "", f.name, out, visited, 0, field);
  } catch (const YAML::Exception& e) {
    throw Error(MEMEST_ERR_PARSE, field,
                field + ": " + f.name + " line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return out;
}

// ---------------------------------------------------------------- shell scripts

namespace {

struct Token {
  std::string text;
  int32_t line;
};

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The shell subset of launch scripts: one logical command per line (backslash continuations
// joined), comments, quotes, NAME=value and NAME=( ... ) assignments, $NAME, ${NAME},
// ${NAME:-default}, ${NAME[@]}; $(...) and arithmetic are left unexpanded.
class ShellReader {
 public:
  ShellReader(const LaunchFile& f, std::string field) : f_(f), field_(std::move(field)) {}

  std::vector<std::vector<Token>> commands() {
    std::vector<std::vector<Token>> out;
    std::vector<Token> words;
    std::size_t i = 0;
    int32_t line = 1;
    const std::string& t = f_.text;
    bool in_array = false;
    bool array_append = false;
    std::string array_name;
    std::vector<Token> array_words;
    auto end_command = [&]() {
      if (in_array) return;
      if (!words.empty()) {
        if (!branch(words) && running()) {
          if (!assign(words)) out.push_back(expand_words(words));
        }
        words.clear();
      }
    };
    while (i < t.size()) {
      const char c = t[i];
      if (c == '\\' && i + 1 < t.size() && t[i + 1] == '\n') {
        i += 2, ++line;
        continue;
      }
      if (c == '\n' || c == ';') {
        if (c == '\n') ++line;
        ++i;
        end_command();
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i;
        continue;
      }
      if (c == '#') {
        while (i < t.size() && t[i] != '\n') ++i;
        continue;
      }
      if (c == ')' && in_array) {
        ++i;
        in_array = false;
        if (running()) {
          std::vector<Token> expanded = expand_words(array_words);
          std::vector<Token>& a = arrays_[array_name];
          if (!array_append) a.clear();
          a.insert(a.end(), expanded.begin(), expanded.end());
          if (a.size() > kMaxArrayItems) too_big(line);
        }
        array_words.clear();
        continue;
      }
      if ((c == '&' || c == '|') && i + 1 < t.size() && t[i + 1] == c && !words.empty() &&
          (words[0].text == "if" || words[0].text == "elif" || words[0].text == "while")) {
        // a condition's && and || stay in the condition
        words.push_back({std::string(2, c), line});
        i += 2;
        continue;
      }
      if (c == '&' || c == '|' || c == '<' || c == '>') {
        // && || | and redirections end the command's words
        end_command();
        while (i < t.size() && (t[i] == '&' || t[i] == '|' || t[i] == '<' || t[i] == '>')) ++i;
        // a redirection's target is one word: skip it
        while (i < t.size() && (t[i] == ' ' || t[i] == '\t')) ++i;
        continue;
      }
      // one word, quotes kept as markers for expansion
      Token w{"", line};
      bool quoted_single = false;
      while (i < t.size()) {
        const char d = t[i];
        if (d == '\\' && i + 1 < t.size()) {
          if (t[i + 1] == '\n') {
            i += 2, ++line;
            break;
          }
          w.text += '\x01';  // escaped: literal next char
          w.text += t[i + 1];
          i += 2;
          continue;
        }
        if (d == '\'' ) {
          const std::size_t close = t.find('\'', i + 1);
          if (close == std::string::npos) unterminated(line);
          for (std::size_t k = i + 1; k < close; ++k) {
            if (t[k] == '\n') ++line;
            w.text += '\x01';
            w.text += t[k];
          }
          quoted_single = true;
          i = close + 1;
          continue;
        }
        if (d == '"') {
          std::size_t k = i + 1;
          while (k < t.size() && t[k] != '"') {
            if (t[k] == '\\' && k + 1 < t.size()) {
              w.text += t[k + 1] == '$' || t[k + 1] == '"' || t[k + 1] == '\\' ? '\x01' : '\\';
              w.text += t[k + 1];
              k += 2;
              continue;
            }
            if (t[k] == '\n') ++line;
            w.text += t[k++];
          }
          if (k >= t.size()) unterminated(line);
          i = k + 1;
          continue;
        }
        if (d == '$' && i + 1 < t.size() && t[i + 1] == '(') {
          // command substitution: kept as written, to its closing parenthesis
          int level = 0;
          std::size_t k = i + 1;
          for (; k < t.size(); ++k) {
            if (t[k] == '(') ++level;
            if (t[k] == ')' && --level == 0) break;
            if (t[k] == '\n') ++line;
          }
          if (k >= t.size()) unterminated(line);
          w.text.append(t, i, k + 1 - i);
          i = k + 1;
          continue;
        }
        if (d == '$' && i + 1 < t.size() && t[i + 1] == '{') {
          const std::size_t close = t.find('}', i);
          if (close == std::string::npos) unterminated(line);
          w.text.append(t, i, close + 1 - i);
          i = close + 1;
          continue;
        }
        if (d == ' ' || d == '\t' || d == '\n' || d == ';' || d == '\r' || d == '&' ||
            d == '|' || d == '<' || d == '>') {
          break;
        }
        if (d == '(' && !w.text.empty() && w.text.back() == '=' && !in_array) {
          // NAME=( ... ) or NAME+=( ... ): a bash array
          array_append = w.text.size() > 1 && w.text[w.text.size() - 2] == '+';
          array_name = w.text.substr(0, w.text.size() - (array_append ? 2 : 1));
          in_array = true;
          w.text.clear();
          ++i;
          break;
        }
        if (d == ')' && in_array) break;
        w.text += d;
        ++i;
      }
      (void)quoted_single;
      if (!w.text.empty() || quoted_single) {
        if (in_array) {
          array_words.push_back(w);
        } else {
          words.push_back(w);
        }
      }
    }
    if (in_array) unterminated(line);
    end_command();
    return out;
  }

 private:
  // Bounds on what variables and arrays expand to (real scripts: < 1 kB, < 100 items).
  static constexpr std::size_t kMaxExpansion = 1u << 16;
  static constexpr std::size_t kMaxArrayItems = 4096;

  [[noreturn]] void too_big(int32_t line) {
    throw Error(MEMEST_ERR_INVALID_ARGUMENT, field_,
                field_ + ": " + f_.name + " line " + std::to_string(line) +
                    ": its variables expand past " + std::to_string(kMaxExpansion) +
                    " characters or " + std::to_string(kMaxArrayItems) +
                    " array items: not a launch script");
  }

  [[noreturn]] void unterminated(int32_t line) {
    throw Error(MEMEST_ERR_PARSE, field_,
                field_ + ": " + f_.name + " line " + std::to_string(line) +
                    ": a quote, ${...}, $(...) or ( ... ) is not closed");
  }

  // if / elif / else / fi: a condition that reads a positional parameter ($1), a command's
  // output or a file test is unknown, and its branches all run (a launch script that picks
  // its command by $1 then offers every command, and the caller picks one).
  enum class Truth { False, True, Unknown };
  struct Frame {
    bool outer;  // the enclosing branch runs
    Truth taken = Truth::False;  // a branch so far was taken (True) or may have been (Unknown)
    bool current = false;
  };
  std::vector<Frame> frames_;

  bool running() const { return frames_.empty() || frames_.back().current; }

  Truth test(const std::vector<Token>& words, std::size_t from) {
    // [[ a == b ]] [ a = b ] [ a != b ] [ -z a ] [ -n a ], joined by && and ||
    Truth result = Truth::False;
    std::string joiner = "";
    std::vector<std::string> terms;
    auto close = [&]() {
      Truth v = Truth::Unknown;
      std::vector<std::string> t;
      bool negate = false;
      for (const std::string& x : terms) {
        if (x == "[[" || x == "]]" || x == "[" || x == "]") continue;
        if (x == "!" && t.empty()) {
          negate = !negate;
          continue;
        }
        t.push_back(x);
      }
      bool unknown = false;
      for (const std::string& x : t) unknown = unknown || x.find('\x03') != std::string::npos;
      if (!unknown) {
        if (t.size() == 3 && (t[1] == "==" || t[1] == "=")) v = t[0] == t[2] ? Truth::True : Truth::False;
        else if (t.size() == 3 && t[1] == "!=") v = t[0] != t[2] ? Truth::True : Truth::False;
        else if (t.size() == 2 && t[0] == "-z") v = t[1].empty() ? Truth::True : Truth::False;
        else if (t.size() == 2 && t[0] == "-n") v = !t[1].empty() ? Truth::True : Truth::False;
        else if (t.size() == 1 && t[0].empty()) v = Truth::False;
      }
      if (negate && v != Truth::Unknown) v = v == Truth::True ? Truth::False : Truth::True;
      if (joiner.empty()) result = v;
      else if (joiner == "||") result = result == Truth::True || v == Truth::True ? Truth::True
                                        : result == Truth::False && v == Truth::False ? Truth::False
                                                                                      : Truth::Unknown;
      else result = result == Truth::False || v == Truth::False ? Truth::False
                    : result == Truth::True && v == Truth::True ? Truth::True
                                                                : Truth::Unknown;
      terms.clear();
    };
    for (std::size_t k = from; k < words.size(); ++k) {
      if (words[k].text == "&&" || words[k].text == "||") {
        close();
        joiner = words[k].text;
        continue;
      }
      if (words[k].text == "then") break;
      terms.push_back(expand(words[k].text, words[k].line, 0, true));
    }
    close();
    return result;
  }

  // Handles a branch keyword; true when `words` was one (then nothing else is run).
  bool branch(std::vector<Token>& words) {
    // "then cmd", "else cmd", "do cmd": the keyword, then a command
    const std::string first = words[0].text;
    if (first == "then" || first == "do") {
      words.erase(words.begin());
      return words.empty();
    }
    if (first == "if") {
      Frame f{running()};
      const Truth t = f.outer ? test(words, 1) : Truth::False;
      f.current = f.outer && t != Truth::False;
      f.taken = t;
      frames_.push_back(f);
      return true;
    }
    if (frames_.empty()) return false;
    Frame& f = frames_.back();
    if (first == "elif") {
      const Truth t = f.outer && f.taken != Truth::True ? test(words, 1) : Truth::False;
      f.current = f.outer && f.taken != Truth::True && t != Truth::False;
      if (t == Truth::True) f.taken = Truth::True;
      else if (t == Truth::Unknown) f.taken = Truth::Unknown;
      return true;
    }
    if (first == "else") {
      f.current = f.outer && f.taken != Truth::True;
      words.erase(words.begin());
      return words.empty();  // "else cmd": the command runs in the else branch
    }
    if (first == "fi") {
      frames_.pop_back();
      return true;
    }
    return false;
  }

  // NAME=value [NAME=value ...] alone on a command (also after export/local/declare/readonly).
  bool assign(const std::vector<Token>& words) {
    std::size_t start = 0;
    if (words[0].text == "export" || words[0].text == "local" || words[0].text == "readonly" ||
        words[0].text == "declare") {
      start = 1;
      while (start < words.size() && words[start].text.size() > 1 && words[start].text[0] == '-') ++start;
    }
    if (start >= words.size()) return true;
    for (std::size_t k = start; k < words.size(); ++k) {
      const std::size_t eq = words[k].text.find('=');
      // "export NAME" alone marks a variable, which changes nothing here
      if (eq == std::string::npos || eq == 0) return start == 1;
      for (std::size_t c = 0; c < eq; ++c) {
        if (!name_char(words[k].text[c])) return false;
      }
    }
    for (std::size_t k = start; k < words.size(); ++k) {
      const std::size_t eq = words[k].text.find('=');
      const std::string name = words[k].text.substr(0, eq);
      vars_[name] = expand(words[k].text.substr(eq + 1), words[k].line, 0, true);
    }
    return true;
  }

  // Expands $NAME, ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:=default}; unknown
  // variables expand to "" (as the shell does); escaped characters (\x01c) become c.
  std::string expand(const std::string& s, int32_t line, int depth = 0, bool mark_unknown = false) {
    if (depth > 8) return s;
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      // A=$A$A doubling: a launch script's values are short; past the bound it is not one
      if (out.size() > kMaxExpansion) too_big(line);
      if (s[i] == '\x01' && i + 1 < s.size()) {
        out += s[++i];
        continue;
      }
      if (s[i] != '$' || i + 1 >= s.size()) {
        out += s[i];
        continue;
      }
      if (s[i + 1] == '{') {
        const std::size_t close = s.find('}', i);
        if (close == std::string::npos) {  // "${" with no "}" (from a variable's value): literal
          out.append(s, i, std::string::npos);
          break;
        }
        const std::string body = s.substr(i + 2, close - i - 2);
        i = close;
        std::size_t n = 0;
        while (n < body.size() && name_char(body[n])) ++n;
        const std::string name = body.substr(0, n);
        std::string rest = body.substr(n);
        if (rest == "[@]" || rest == "[*]") {
          auto a = arrays_.find(name);
          if (a != arrays_.end()) {
            for (std::size_t k = 0; k < a->second.size(); ++k) {
              if (k) out += '\x02';  // array items stay separate words
              out += a->second[k].text;
            }
          }
          continue;
        }
        auto v = vars_.find(name);
        const bool set = v != vars_.end();  // the environment is not read: defaults apply
        if (rest.rfind(":-", 0) == 0 || rest.rfind(":=", 0) == 0 || rest.rfind("-", 0) == 0) {
          const std::string fallback = rest.substr(rest[0] == ':' ? 2 : 1);
          // ${A:-x} replaces an unset or empty A; ${A-x} only an unset one
          if (set && (!v->second.empty() || rest[0] != ':')) {
            out += v->second;
          } else {
            const std::string d = expand(fallback, line, depth + 1);
            if (rest.rfind(":=", 0) == 0) vars_[name] = d;
            out += d;
          }
          continue;
        }
        if (set) out += v->second;
        continue;
      }
      if (s[i + 1] == '(') {  // $(...) left as written
        if (mark_unknown) out += '\x03';
        out += s[i];
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '@' || s[i + 1] == '#' ||
          s[i + 1] == '*') {
        // positional parameters: not known when the script is read
        if (mark_unknown) out += '\x03';
        ++i;
        continue;
      }
      std::size_t n = i + 1;
      while (n < s.size() && name_char(s[n])) ++n;
      if (n == i + 1) {
        out += s[i];
        continue;
      }
      auto v = vars_.find(s.substr(i + 1, n - i - 1));
      if (v != vars_.end()) out += v->second;
      i = n - 1;
    }
    return out;
  }

  std::vector<Token> expand_words(const std::vector<Token>& words) {
    std::vector<Token> out;
    for (const Token& w : words) {
      // an array expanded inside a word: its own line numbers when it is the whole word
      if (w.text.size() > 4 && w.text.rfind("${", 0) == 0 && w.text.back() == '}' &&
          (w.text.find("[@]") != std::string::npos || w.text.find("[*]") != std::string::npos)) {
        const std::string name = w.text.substr(2, w.text.find('[') - 2);
        auto a = arrays_.find(name);
        if (a != arrays_.end()) {
          out.insert(out.end(), a->second.begin(), a->second.end());
          continue;
        }
      }
      const std::string e = expand(w.text, w.line);
      // unquoted expansions split on blanks (the array separator too)
      std::string cur;
      bool any = false;
      for (char c : e) {
        if (c == '\x03') continue;  // an unknown value's mark (conditions only)
        if (c == ' ' || c == '\t' || c == '\n' || c == '\x02') {
          if (!cur.empty()) out.push_back({cur, w.line});
          cur.clear();
          any = true;
        } else {
          cur += c;
        }
      }
      if (!cur.empty() || (!any && e.empty() && w.text.find('$') == std::string::npos)) {
        out.push_back({cur, w.line});
      }
    }
    return out;
  }

  const LaunchFile& f_;
  std::string field_;
  std::map<std::string, std::string> vars_;
  std::map<std::string, std::vector<Token>> arrays_;
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string base_name(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "--key value", "--key=value" and bare "--flag" options, until the end of the words.
void read_options(const std::vector<Token>& words, std::size_t from, std::size_t to,
                  const std::string& file, Settings& out) {
  for (std::size_t k = from; k < to; ++k) {
    const std::string& w = words[k].text;
    if (w.size() < 2 || w[0] != '-') continue;
    const std::size_t eq = w.find('=');
    if (eq != std::string::npos) {
      out.put(w.substr(0, eq), Setting{w.substr(eq + 1), file, words[k].line, w.substr(0, eq)});
      continue;
    }
    // the value is the next word unless it is another option (a negative number is a value)
    if (k + 1 < to && !(words[k + 1].text.size() > 1 && words[k + 1].text[0] == '-' &&
                        !std::isdigit(static_cast<unsigned char>(words[k + 1].text[1])))) {
      // several values (--lora-targets a b): kept as a list
      std::size_t e = k + 1;
      while (e < to && !(words[e].text.size() > 1 && words[e].text[0] == '-' &&
                         !std::isdigit(static_cast<unsigned char>(words[e].text[1])))) {
        ++e;
      }
      if (e - k == 2) {
        out.put(w, Setting{words[k + 1].text, file, words[k].line, w});
      } else {
        json list = json::array();
        for (std::size_t v = k + 1; v < e; ++v) list.push_back(words[v].text);
        out.put(w, Setting{list, file, words[k].line, w});
      }
      k = e - 1;
    } else {
      out.put(w, Setting{true, file, words[k].line, w});
    }
  }
}

}  // namespace

bool looks_like_shell(const std::string& text) {
  if (text.rfind("#!", 0) == 0) return true;
  // a line (not a comment) whose command, after VAR=value words, is a launcher
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::size_t k = text.find_first_not_of(" \t", at);
    while (k < end) {
      std::size_t word_end = text.find_first_of(" \t", k);
      if (word_end == std::string::npos || word_end > end) word_end = end;
      const std::string word = text.substr(k, word_end - k);
      if (word.empty() || word[0] == '#') break;
      const std::size_t eq = word.find('=');
      if (eq != std::string::npos && eq > 0 && word.find(':') == std::string::npos) {
        k = text.find_first_not_of(" \t", word_end);  // an environment assignment
        continue;
      }
      for (const char* launcher : {"torchrun", "python", "python3", "deepspeed", "accelerate",
                                   "srun", "tune", "llamafactory-cli", "axolotl", "export"}) {
        if (base_name(word) == launcher) return true;
      }
      break;
    }
    at = end + 1;
  }
  return false;
}

namespace {

// The training command of `words`, if it is one: a launcher (torchrun, python -m
// torch.distributed.launch/run, deepspeed, accelerate launch, python, tune, llamafactory-cli,
// axolotl) with a script, module or subcommand.
std::optional<ShellCommand> training_command(const std::vector<Token>& words, const std::string& file) {
  auto is_option = [&](std::size_t k) { return k < words.size() && words[k].text.size() > 1 && words[k].text[0] == '-'; };
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string w = base_name(words[i].text);
    ShellCommand cmd;
    cmd.line = words[i].line;
    // the CLIs with a verb: tune run [OPTS] RECIPE --config C; llamafactory-cli train C;
    // axolotl train C
    if ((w == "tune" || w == "llamafactory-cli" || w == "axolotl") && i + 1 < words.size()) {
      cmd.launcher = w + " " + words[i + 1].text;
      std::size_t k = i + 2;
      while (is_option(k)) k += (k + 1 < words.size() && !is_option(k + 1)) ? 2 : 1;
      read_options(words, i + 2, std::min(k, words.size()), file, cmd.launcher_options);
      if (k < words.size()) cmd.script = words[k].text;
      read_options(words, k + 1, words.size(), file, cmd.options);
      return cmd;
    }
    const bool accelerate = w == "accelerate" && i + 1 < words.size() && words[i + 1].text == "launch";
    if (!(w == "torchrun" || w == "deepspeed" || accelerate || w == "python" || w == "python3")) {
      continue;
    }
    cmd.launcher = accelerate ? "accelerate launch" : w;
    std::size_t first = i + (accelerate ? 2 : 1);
    for (std::size_t j = first; j < words.size(); ++j) {
      const std::string& s = words[j].text;
      if (s == "-m" && j + 1 < words.size()) {
        const std::string module = words[j + 1].text;
        if (module == "torch.distributed.launch" || module == "torch.distributed.run") {
          // python -m torch.distributed.launch: the launcher; its script follows
          cmd.launcher = "torchrun";
          first = j + 2;
          ++j;
          continue;
        }
        cmd.script = "-m " + module;
        read_options(words, first, j, file, cmd.launcher_options);
        // -m axolotl.cli.train CONFIG: the config is the module's first argument
        std::size_t k = j + 2;
        if (k < words.size() && !is_option(k)) cmd.options.put("config", Setting{words[k].text, file, words[k].line, "config"}), ++k;
        read_options(words, k, words.size(), file, cmd.options);
        return cmd;
      }
      if (ends_with(s, ".py") || ends_with(s, ".yaml") || ends_with(s, ".yml")) {
        cmd.script = s;
        read_options(words, first, j, file, cmd.launcher_options);
        read_options(words, j + 1, words.size(), file, cmd.options);
        return cmd;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

ShellCommand read_shell(const LaunchFile& f, const std::string& field,
                        const std::vector<std::string>& prefer) {
  check_launch_text(f, field);
  ShellReader reader(f, field);
  const std::vector<std::vector<Token>> commands = reader.commands();
  std::vector<ShellCommand> found;
  for (const std::vector<Token>& words : commands) {
    if (auto c = training_command(words, f.name)) found.push_back(std::move(*c));
  }
  if (found.empty()) {
    fail(field, f.name + " runs no training command (torchrun, python, deepspeed, accelerate "
                         "launch, tune run or llamafactory-cli with a script)");
  }
  // Several (a script that picks one by its arguments): the one whose option names a file
  // given beside it (--deepspeed ds_config.json, --config_file x.yaml), else the last.
  for (const ShellCommand& c : found) {
    for (const Settings* o : {&c.options, &c.launcher_options}) {
      for (const auto& [key, value] : o->all()) {
        if (!value.value.is_string()) continue;
        const std::string named = base_name(value.value.get<std::string>());
        for (const std::string& p : prefer) {
          if (!named.empty() && named == base_name(p)) return c;
        }
      }
    }
  }
  return found.back();
}

}  // namespace memest::launch
